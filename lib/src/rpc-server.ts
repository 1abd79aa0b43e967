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
  /** The port opened before the service was ready (openStartingPort): its server takes over, no gap. */
  starting?: StartingPort;
}

/**
 * A service's RPC port opened as its process starts, before its migrations: the health service answers
 * `liveness` SERVING (the process is alive, so startup and liveness probes pass however long a migration,
 * or the wait for another replica's, takes) and every other check NOT_SERVING (not ready); any other call
 * answers HTTP 503 (gRPC UNAVAILABLE). startRpcServer takes over its listener once the service is ready.
 */
export interface StartingPort {
  server: http2.Http2Server;
  sessions: Set<http2.Http2Session>;
  close(): Promise<void>;
}

export async function openStartingPort(opts: {
  name: string;
  host: string;
  port: number;
  logger: Logger;
}): Promise<StartingPort> {
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(Health, {
        check: async (req) => {
          if (!(HEALTH_CHECKS as readonly string[]).includes(req.service)) {
            throw new ConnectError(
              `unknown health check "${req.service}"; known: ${HEALTH_CHECKS.join(', ')}`,
              Code.NotFound,
            );
          }
          const alive = req.service === 'liveness';
          return create(HealthCheckResponseSchema, {
            status: alive ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.NOT_SERVING,
          });
        },
      }),
    fallback: (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end(`${opts.name} is starting`);
    },
  });
  const server = http2.createServer(handler);
  const sessions = new Set<http2.Http2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  await listen(server, opts.port, opts.host, `${opts.name} rpc`);
  opts.logger.info({ service: opts.name, port: opts.port }, 'rpc port open for health checks; starting');
  return {
    server,
    sessions,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.destroy();
      }),
  };
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
  let server: http2.Http2Server;
  let sessions: Set<http2.Http2Session>;
  if (opts.starting) {
    // The port is already open: the full handler replaces the starting one on the same listener.
    ({ server, sessions } = opts.starting);
    server.removeAllListeners('request');
    server.on('request', handler);
  } else {
    server = http2.createServer(handler);
    sessions = new Set<http2.Http2Session>();
    server.on('session', (s) => {
      sessions.add(s);
      s.on('close', () => sessions.delete(s));
    });
    await listen(server, opts.port, opts.host, `${opts.name} rpc`);
  }
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
