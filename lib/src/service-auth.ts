import { createHash, timingSafeEqual } from 'node:crypto';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { Logger } from './logger.js';

// Service credentials: one shared secret (SERVICE_TOKEN) that every internal caller sends as
// `authorization: Bearer <token>` and every service checks. The launcher hands it to the
// services through the environment (a Kubernetes Secret in the chart), so no other lookup exists.

/** Probes (kubelet, load balancers) carry no credentials: the health service stays open. */
const OPEN_SERVICES = new Set(['grpc.health.v1.Health']);

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time: hashing first makes both sides the same length whatever was sent. */
export function tokenMatches(expected: string, header: string | null): boolean {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  const given = match ? match[1] : '';
  return timingSafeEqual(digest(expected), digest(given)) && given.length > 0;
}

/** Server side: refuses calls without the right token with UNAUTHENTICATED, before any handler runs. */
export function serviceAuthInterceptor(token: string, logger: Logger): Interceptor {
  return (next) => async (req) => {
    if (!OPEN_SERVICES.has(req.service.typeName) && !tokenMatches(token, req.header.get('authorization'))) {
      logger.warn({ procedure: req.url }, 'rpc refused: missing or wrong service token');
      throw new ConnectError('missing or invalid service credentials', Code.Unauthenticated);
    }
    return next(req);
  };
}

/** Client side: every call carries the token. */
export function bearerInterceptor(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set('authorization', `Bearer ${token}`);
    return next(req);
  };
}

/** The one rule of the launcher: outside embedded mode the ports are reachable, so a token is required. */
export function serviceTokenProblem(serviceToken: string | undefined, embedded: boolean): string | undefined {
  if (embedded || serviceToken) return undefined;
  return 'SERVICE_TOKEN is required when DATABASE_URL is set (the shared secret of internal RPC calls)';
}
