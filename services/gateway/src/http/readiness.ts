import type { RequestHandler } from 'express';
import type { Config } from '@svc/lib/config';
import { RETRY_AFTER_SECONDS } from '@svc/lib/errors';
import { isDraining } from '@svc/lib/lifecycle';
import { createRpcClient } from '@svc/lib/rpc-client';
import { Health, HealthCheckResponse_ServingStatus } from '@svc/proto/grpc/health/v1/health_pb';

/** Resolves true when the dependency can serve now; false or a rejection means it cannot. */
export type ReadinessCheck = () => Promise<boolean>;

const CHECK_TIMEOUT_MS = 2000;

/**
 * A service's named gRPC health checks (lib/src/rpc-server.ts): `""` is its readiness (SERVING while it
 * is not draining, its database answers and has every migration), `database` and `migrations` the parts.
 */
export function serviceHealthCheck(config: Config, service: string, name = ''): ReadinessCheck {
  const client = createRpcClient(Health, config.rpcUrls[service], { ...config, rpcTimeoutMs: CHECK_TIMEOUT_MS });
  return async () => (await client.check({ service: name })).status === HealthCheckResponse_ServingStatus.SERVING;
}

/** What `/readyz` reports of each service beside its readiness: its database and its migrations. */
export const SERVICE_PARTS = ['database', 'migrations'] as const;

function bounded(check: ReadinessCheck): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  return Promise.race([check().catch(() => false), timeout]).finally(() => clearTimeout(timer));
}

const state = (up: boolean) => (up ? 'ok' : 'down');

/**
 * `GET /readyz`: 200 `{status: 'ok', checks, services}` when every dependency answers, else 503 naming
 * the ones that do not (`checks: {contacts: 'down', ...}`); `services` details each service's database
 * and migrations (`{contacts: {database: 'ok', migrations: 'ok'}}`). After SIGTERM the status is
 * `draining` (503). `/healthz` stays a liveness check.
 */
export function readyz(
  checks: Record<string, ReadinessCheck>,
  parts: Record<string, Record<string, ReadinessCheck>> = {},
): RequestHandler {
  return async (_req, res) => {
    const names = Object.keys(checks);
    const [results, details] = await Promise.all([
      Promise.all(names.map((name) => bounded(checks[name]))),
      Promise.all(
        Object.entries(parts).map(async ([service, its]) => {
          const answers = await Promise.all(Object.values(its).map(bounded));
          return [service, Object.fromEntries(Object.keys(its).map((part, i) => [part, state(answers[i])]))] as const;
        }),
      ),
    ]);
    const draining = isDraining();
    const ready = results.every(Boolean) && !draining;
    if (!ready) res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    res.status(ready ? 200 : 503).json({
      status: draining ? 'draining' : ready ? 'ok' : 'unavailable',
      checks: Object.fromEntries(names.map((name, i) => [name, state(results[i])])),
      services: Object.fromEntries(details),
    });
  };
}
