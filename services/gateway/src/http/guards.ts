import express, { type RequestHandler } from 'express';
import type { IdempotencyStore } from '@svc/lib/idempotency-store';
import type { RateLimiter } from '@svc/lib/rate-limit';
import type { GatewayConfig } from '../config.js';
import type { Authenticator } from './auth.js';
import { idempotency } from './idempotency.js';
import { jsonBody } from './input-guard.js';
import { routeBudgets } from './rate-limit.js';

/**
 * The middleware chains API-key routes use: authenticate, count against the project's budget,
 * honour Idempotency-Key.
 */
export interface KeyGuards {
  secret: RequestHandler;
  public: RequestHandler;
  /** `public`'s handlers one by one, for the `/v1/track` lane (lane.ts), which runs them without a router. */
  publicSteps: RequestHandler[];
  send: RequestHandler;
  /** `send`'s handlers for the `/v1/send` lane: the key guard before the lane reads the body, the rest after. */
  sendSteps: { beforeBody: RequestHandler[]; afterBody: RequestHandler[] };
}

const SEND_BODY_LIMIT = '56mb';

/** Several handlers as one. */
export function chain(...handlers: RequestHandler[]): RequestHandler {
  const router = express.Router();
  router.use(...handlers);
  return router;
}

export function keyGuards(
  auth: Authenticator,
  limiter: RateLimiter,
  idempotencyStore: IdempotencyStore,
  config: GatewayConfig,
): KeyGuards {
  const limit = routeBudgets(limiter, config);
  const idem = idempotency(idempotencyStore, config.idempotencyTtlSeconds);
  const publicSteps = [auth.key('public'), limit.track, idem];
  const sendSteps = { beforeBody: [auth.key('secret')], afterBody: [limit.send, idem] };
  return {
    secret: chain(auth.key('secret'), limit.api, idem),
    public: chain(...publicSteps),
    publicSteps,
    // /v1/send carries attachments (10 MB, base64-encoded) inside a 40 MB message: its large
    // body is read only once the key is known, and before idempotency fingerprints it.
    send: chain(...sendSteps.beforeBody, ...jsonBody(SEND_BODY_LIMIT), ...sendSteps.afterBody),
    sendSteps,
  };
}
