import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { readBusMessage } from '@svc/lib/bus-topic';
import { isDraining } from '@svc/lib/lifecycle';
import { StartupError, listen } from '@svc/lib/listen';
import { MemoryIdempotencyStore, RedisIdempotencyStore } from '@svc/lib/idempotency-store';
import { FailOpenRateLimiter, MemoryRateLimiter, SlicedRateLimiter } from '@svc/lib/rate-limit';
import { FailOpenTokenBuckets, MemoryTokenBuckets, RedisTokenBuckets } from '@svc/lib/token-bucket';
import { RedisLink } from '@svc/lib/redis';
import type { RunningService, Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import { createApp } from './app.js';
import { CALLABLE_SERVICES, createClients } from './clients.js';
import { type GatewayEnv, gatewayEnv, sessionSecretProblem } from './config.js';
import { answerClientError } from './http/client-error.js';
import { expressServer } from './http/express-server.js';
import { KeyCache } from './http/key-cache.js';
import { SERVICE_PARTS, serviceHealthCheck } from './http/readiness.js';

/** DATA_DIR/session-secret, created (mode 0600) on the first embedded start. */
export function embeddedSessionSecret(dataDir: string): string {
  const file = path.resolve(dataDir, 'session-secret');
  try {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept.length >= 16) return kept;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const secret = randomBytes(32).toString('hex');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

export interface RunningGateway extends RunningService {
  url: string;
}

export async function startGateway(rt: Runtime<GatewayEnv>, opts: { embedded: boolean }): Promise<RunningGateway> {
  const { config, logger } = rt;
  const redis = config.redisUrl
    ? new RedisLink(config.redisUrl, {
        commandTimeoutMs: config.redisCommandTimeoutMs,
        logger,
        degradedTo: 'rate limits counted in-process, key cache and Idempotency-Key claims skipped until it is back',
      })
    : undefined;
  // Keys are prefixed per deployment (BUS_PREFIX), so deployments can share one Redis.
  const prefix = config.busPrefix;
  // bin/platform.ts refuses distributed mode without SESSION_SECRET before any service starts (configProblem).
  const missing = sessionSecretProblem(config.sessionSecret, opts.embedded);
  if (missing) throw new StartupError(missing);
  // Embedded mode keeps a generated secret in its data folder: sessions (and the mail viewer) survive restarts.
  const sessionSecret = config.sessionSecret ?? embeddedSessionSecret(config.dataDir);
  const keyCache = new KeyCache(config.keyCacheTtlSeconds, redis, `${prefix}:keys`);
  // The replica that answered a project's DELETE or key rotation dropped its keys already; every other replica
  // hears it here (its in-process layer would otherwise keep the old keys for up to a second, or the whole TTL).
  const { projectDeleted, projectKeysRotated } = IDENTITY_TOPICS;
  rt.bus.watch([projectDeleted.subject], (m) => {
    void keyCache.forgetProject(readBusMessage(projectDeleted, m.data).projectId);
  });
  rt.bus.watch([projectKeysRotated.subject], (m) => {
    void keyCache.forgetProject(readBusMessage(projectKeysRotated, m.data).projectId);
  });
  const app = createApp({
    config,
    logger,
    clients: createClients(config),
    // Each replica spends a slice of the shared budget taken from Redis in chunks (one round trip per chunk).
    limiter: redis
      ? new FailOpenRateLimiter(new SlicedRateLimiter(new RedisTokenBuckets(redis, `${prefix}:rl`)))
      : new MemoryRateLimiter(),
    // The login guard's failure budgets: whole buckets, as tokens are given back when an attempt succeeds.
    loginBuckets: redis
      ? new FailOpenTokenBuckets(new RedisTokenBuckets(redis, `${prefix}:login`))
      : new MemoryTokenBuckets(),
    idempotencyStore: redis ? new RedisIdempotencyStore(redis, `${prefix}:idem`) : new MemoryIdempotencyStore(),
    keyCache,
    sessionSecret,
    embedded: opts.embedded,
    readiness: {
      ...Object.fromEntries(CALLABLE_SERVICES.map((s) => [s.name, serviceHealthCheck(config, s.name)])),
      bus: async () => rt.bus.connected(),
      ...(redis ? { redis: () => redis.run((r) => r.ping()).then(() => true) } : {}),
    },
    readinessParts: Object.fromEntries(
      CALLABLE_SERVICES.map((s) => [
        s.name,
        Object.fromEntries(SERVICE_PARTS.map((part) => [part, serviceHealthCheck(config, s.name, part)])),
      ]),
    ),
  });
  const server: Server = expressServer(app);
  // The client, not the server, should end an idle keep-alive connection: a request sent on a connection the
  // server is closing fails with "other side closed" (seen when the client's event loop was busy past its own
  // 4 s idle timer). Longer than a load balancer's usual 60 s idle timeout, as their guides ask.
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  // From SIGTERM on (the drain delay included), every answer says `Connection: close`: a keep-alive client
  // reconnects, through its load balancer, to a replica that stays, instead of holding this connection until the
  // listener closes it (a request sent as it closes fails) or for the whole SHUTDOWN_TIMEOUT_MS.
  let stopping = false;
  server.prependListener('request', (_req, res) => {
    if (stopping || isDraining()) res.setHeader('Connection', 'close');
  });
  await listen(server, config.port, config.bindHost, 'gateway');
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, 'gateway listening');
  return {
    name: 'gateway',
    url: `http://localhost:${port}`,
    async stop() {
      stopping = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A connection busy at close turns idle when its answer is sent: closed then, not at the timeout.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      await closed;
      clearInterval(sweep);
      clearTimeout(timer);
      redis?.disconnect();
    },
  };
}

/** The registry loads this (services/registry.ts). */
export const service = serviceModule({
  config: gatewayEnv,
  configProblem: (own, embedded) => sessionSecretProblem(own.sessionSecret, embedded),
  start: (rt) => startGateway(rt, { embedded: rt.embedded }),
});
