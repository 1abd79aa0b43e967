# One image for every service; the container argument names the service (see deploy/k8s).
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
COPY lib/package.json lib/
COPY proto/package.json proto/
COPY services/ services/
RUN npm ci --omit=dev --ignore-scripts=false && npm cache clean --force
COPY . .
ENV NODE_ENV=production
USER node
ENTRYPOINT ["node", "--import", "tsx", "bin/platform.ts"]
