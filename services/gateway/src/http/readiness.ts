import type { RequestHandler } from 'express';
import type { Config } from '@svc/lib/config';
import { RETRY_AFTER_SECONDS } from '@svc/lib/errors';
import { createRpcClient } from '@svc/lib/rpc-client';
import { Health, HealthCheckResponse_ServingStatus } from '@svc/proto/grpc/health/v1/health_pb';

/** Resolves true when the dependency can serve now; false or a rejection means it cannot. */
export type ReadinessCheck = () => Promise<boolean>;

const CHECK_TIMEOUT_MS = 2000;

/** A service is ready when its gRPC health says SERVING, which follows the service's own database. */
export function serviceHealthCheck(config: Config, service: string): ReadinessCheck {
  const client = createRpcClient(Health, config.rpcUrls[service], { ...config, rpcTimeoutMs: CHECK_TIMEOUT_MS });
  return async () => (await client.check({})).status === HealthCheckResponse_ServingStatus.SERVING;
}

function bounded(check: ReadinessCheck): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  return Promise.race([check().catch(() => false), timeout]).finally(() => clearTimeout(timer));
}

/**
 * `GET /readyz`: 200 `{status: 'ok', checks}` when every dependency answers, else 503 naming
 * the ones that do not (`checks: {contacts: 'down', ...}`). `/healthz` stays a liveness check.
 */
export function readyz(checks: Record<string, ReadinessCheck>): RequestHandler {
  return async (_req, res) => {
    const names = Object.keys(checks);
    const results = await Promise.all(names.map((name) => bounded(checks[name])));
    const ready = results.every(Boolean);
    if (!ready) res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ok' : 'unavailable',
      checks: Object.fromEntries(names.map((name, i) => [name, results[i] ? 'ok' : 'down'])),
    });
  };
}
