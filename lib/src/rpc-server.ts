import { listen } from './listen.js';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { create } from '@bufbuild/protobuf';
import type { ConnectRouter, Interceptor } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import {
  Health,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
} from '@svc/proto/grpc/health/v1/health_pb';
import type { DbHealth } from './db-health.js';
import { isDependencyUnavailable } from './dependency-errors.js';
import { AppError } from './errors.js';
import type { Logger } from './logger.js';
import { rpcMetricsInterceptor } from './metrics.js';
import { contextServerInterceptor } from './rpc-context.js';
import { toConnectError } from './rpc-errors.js';
import { serviceAuthInterceptor } from './service-auth.js';

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
  const handler = connectNodeAdapter({
    // Metrics aside, the request context is outermost, so even a refusal's log line carries the request id;
    // authentication comes next: a refused call never reaches the handlers or the error log.
    interceptors: [
      // Metrics first of all: refused and failed calls are counted with their code too.
      rpcMetricsInterceptor(),
      contextServerInterceptor(opts.logger),
      ...(opts.serviceToken ? [serviceAuthInterceptor(opts.serviceToken, opts.logger)] : []),
      errorInterceptor(opts.logger, opts.health),
    ],
    routes: (router) => {
      opts.routes(router);
      router.service(Health, {
        check: async () => {
          const up = serving && (opts.health ? await opts.health.check() : true);
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
  return {
    port,
    async close() {
      serving = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.close();
      const timer = setTimeout(() => {
        for (const s of sessions) s.destroy();
      }, opts.shutdownTimeoutMs);
      await closed;
      clearTimeout(timer);
    },
  };
}
