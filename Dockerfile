# syntax=docker/dockerfile:1
# One image for every service; the container argument names the service (see deploy/k8s), `--migrate`
# applies the migrations and exits (the Helm chart's migration Job). Plain node runs compiled JavaScript:
# no TypeScript or transpiler in the final image, production dependencies only, a non-root user, and tini
# as PID 1 forwarding SIGTERM (the platform drains, then exits).

# Workspace manifests: every package.json npm needs to install the workspace (test/image.test.ts checks the list).
FROM node:20-bookworm-slim AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY lib/package.json lib/
COPY proto/package.json proto/
COPY services/identity/package.json services/identity/
COPY services/contacts/package.json services/contacts/
COPY services/messaging/package.json services/messaging/
COPY services/campaigns/package.json services/campaigns/
COPY services/segments/package.json services/segments/
COPY services/workflows/package.json services/workflows/
COPY services/gateway/package.json services/gateway/

# Build: every dependency (TypeScript included), then tsc to dist/ and the web console's bundle (scripts/build-dist.ts).
FROM manifests AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build-dist.ts scripts/
COPY bin bin
COPY lib/src lib/src
COPY proto/gen proto/gen
COPY proto/topics proto/topics
COPY services services
COPY apps/console apps/console
RUN npm run build:dist

# Production dependencies only.
FROM manifests AS deps
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
# A 32 MiB young generation (V8's default is 16): a quarter to a third of it survives each scavenge under load, so
# a larger one costs less CPU per message for some more memory (README, "Throughput against memory"). The chart's
# `env` can replace it. The benches run the services with these flags (test/support/processes.ts, imageNodeFlags).
ENV NODE_OPTIONS="--max-semi-space-size=32"
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/dist dist
# The node image's `node` user (uid 1000, the Helm chart's runAsUser); the root filesystem can be read-only.
USER node
ENTRYPOINT ["/usr/bin/tini", "--", "node", "dist/bin/platform.js"]
