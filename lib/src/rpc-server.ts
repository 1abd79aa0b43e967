import { listen } from './listen.js';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type ConnectRouter, type Interceptor } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import {
  Health,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
} from '@svc/proto/grpc/health/v1/health_pb';
import type { DbHealth } from './db-health.js';
import { isDependencyUnavailable } from './dependency-errors.js';
import { AppError } from './errors.js';
import { isDraining } from './lifecycle.js';
import type { Logger } from './logger.js';
import { rpcMetricsInterceptor } from './metrics.js';
import { contextServerInterceptor } from './rpc-context.js';
import { LocalServer, registerLocalServer } from './rpc-local.js';
import { toConnectError } from './rpc-errors.js';
import { serviceAuthInterceptor } from './service-auth.js';
import { tracingOn, tracingServerInterceptor } from './tracing.js';

export interface RpcServer {
  port: number;
  close(): Promise<void>;
}

export interface RpcServerOptions {
  name: string;
  host: string;
  port: number;
  routes: (router: ConnectRouter) => void;
  logger: Logger;
  shutdownTimeoutMs: number;
  /** Callers must send it as a bearer token (health checks excepted); unset: no check (embedded, loopback only). */
  serviceToken?: string;
  /** The service's database: its outages are logged once per change, and the health check follows it. */
  health?: Pick<DbHealth, 'report' | 'check'>;
  /** True when the service's database has every migration the code knows (checked by health checks). */
  migrations?: () => Promise<boolean>;
  /** Embedded mode: clients in this process call the handlers directly (rpc-local.ts), the port still serves. */
  inProcess?: boolean;
}

/**
 * The named checks of the health service (`HealthCheckRequest.service`): `""` is the service's readiness
 * (serving, not draining, database answering, migrations applied); `liveness` only says the process
 * serves RPCs (no dependency: a database outage must not get pods restarted); `database` and
 * `migrations` are the parts of readiness, for `/readyz` to report. Any other name is NOT_FOUND.
 */
export const HEALTH_CHECKS = ['', 'liveness', 'database', 'migrations'] as const;

function healthCheck(opts: RpcServerOptions, serving: () => boolean): (name: string) => Promise<boolean> {
  const database = async () => (opts.health ? opts.health.check() : true);
  const migrations = async () => (opts.migrations ? opts.migrations().catch(() => false) : true);
  return async (name) => {
    switch (name) {
      case '':
        return serving() && !isDraining() && (await database()) && (await migrations());
      case 'liveness':
        return serving();
      case 'database':
        return database();
      case 'migrations':
        // Unknown while the database does not answer: not confirmed, so not SERVING.
        return (await database()) && (await migrations());
      default:
        throw new ConnectError(`unknown health check "${name}"; known: ${HEALTH_CHECKS.join(', ')}`, Code.NotFound);
    }
  };
}

function errorInterceptor(logger: Logger, health?: RpcServerOptions['health']): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      // An outage (ours, reported to `health`, or a callee's 503) is logged where its state changes.
      const outage =
        health?.report(err) || isDependencyUnavailable(err) || (err instanceof AppError && err.status === 503);
      if (!outage && (!(err instanceof AppError) || err.status >= 500)) {
        logger.error({ err, procedure: req.method.name }, 'rpc failed');
      }
      throw toConnectError(err);
    }
  };
}

/**
 * One HTTP/2 port speaking gRPC, gRPC-Web and Connect, with the standard gRPC health
 * service. Close stops accepting, lets in-flight calls finish, then cuts what remains.
 */
export async function startRpcServer(opts: RpcServerOptions): Promise<RpcServer> {
  let serving = true;
  const check = healthCheck(opts, () => serving);
  // Metrics aside, the request context is outermost, so even a refusal's log line carries the request id;
  // authentication comes next: a refused call never reaches the handlers or the error log.
  const interceptors = [
    // Metrics first of all: refused and failed calls are counted with their code too.
    rpcMetricsInterceptor(),
    contextServerInterceptor(opts.logger),
    // Traces on: the call's span, under the caller's (lib/tracing.ts); nothing at all when off.
    ...(tracingOn() ? [tracingServerInterceptor(opts.name)] : []),
    ...(opts.serviceToken ? [serviceAuthInterceptor(opts.serviceToken, opts.logger)] : []),
    errorInterceptor(opts.logger, opts.health),
  ];
  const local = opts.inProcess ? new LocalServer(interceptors) : undefined;
  const handler = connectNodeAdapter({
    interceptors,
    routes: (connectRouter) => {
      const router = local ? local.recording(connectRouter) : connectRouter;
      opts.routes(router);
      router.service(Health, {
        check: async (req) => {
          const up = await check(req.service);
          return create(HealthCheckResponseSchema, {
            status: up ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.NOT_SERVING,
          });
        },
      });
    },
  });
  const server = http2.createServer(handler);
  const sessions = new Set<http2.Http2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  await listen(server, opts.port, opts.host, `${opts.name} rpc`);
  const port = (server.address() as AddressInfo).port;
  opts.logger.info({ service: opts.name, port }, 'rpc server listening');
  const unregister = local ? registerLocalServer(`http://127.0.0.1:${port}`, local) : () => undefined;
  return {
    port,
    async close() {
      serving = false;
      unregister();
      const localClosed = local?.close(opts.shutdownTimeoutMs);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.close();
      const timer = setTimeout(() => {
        for (const s of sessions) s.destroy();
      }, opts.shutdownTimeoutMs);
      await closed;
      clearTimeout(timer);
      await localClosed;
    },
  };
}
