import type { RequestHandler } from 'express';
import type { GatewayConfig as Config } from '../config.js';
import { AppError } from '@svc/lib/errors';
import type { RateLimiter } from '@svc/lib/rate-limit';
import { clientNetwork } from './client-network.js';

const WINDOW_MS = 60_000;

/**
 * Route families, each with its own per-project budget, so a burst of tracked events cannot
 * starve sending or the management API, and the reverse. The family is the key guard's: the
 * public key (ingestion: /v1/track), /v1/send, and every other secret-key route (management).
 */
export type RouteFamily = 'track' | 'send' | 'api';

/** Per-project request budget of one family, shared by every gateway replica; runs after key authentication. */
export function rateLimit(limiter: RateLimiter, family: RouteFamily, perMinute: number): RequestHandler {
  return async (req, res, next) => {
    const d = await limiter.hit(`${family}:${req.projectId}`, perMinute, WINDOW_MS);
    res.setHeader('X-RateLimit-Limit', String(d.limit));
    res.setHeader('X-RateLimit-Remaining', String(d.remaining));
    if (!d.allowed) {
      throw new AppError({
        code: 'RATE_LIMIT_EXCEEDED',
        status: 429,
        message: `Rate limit of ${perMinute} requests per minute exceeded`,
        details: { retryAfter: d.retryAfter, limit: d.limit, budget: family },
      });
    }
    next();
  };
}

/** The three families' limiters (SPEC.md's 1000 per minute per project is the management budget). */
export function routeBudgets(limiter: RateLimiter, config: Config): Record<RouteFamily, RequestHandler> {
  return {
    api: rateLimit(limiter, 'api', config.rateLimitPerMinute),
    track: rateLimit(limiter, 'track', config.trackRateLimitPerMinute),
    send: rateLimit(limiter, 'send', config.sendRateLimitPerMinute),
  };
}

/**
 * Sign-up attempts per client (an IPv4 address or an IPv6 /64) per hour, before identity is asked. Every attempt
 * counts, a refused one too: a 409 tells whether an address has an account.
 */
export function signupBudget(limiter: RateLimiter, perHour: number): RequestHandler {
  return async (req, _res, next) => {
    const d = await limiter.hit(`signup:${clientNetwork(req.ip)}`, perHour, 3_600_000);
    if (!d.allowed) {
      throw new AppError({
        code: 'RATE_LIMIT_EXCEEDED',
        status: 429,
        message: 'Too many sign-ups from this address; try again later',
        details: { retryAfter: d.retryAfter, limit: d.limit },
      });
    }
    next();
  };
}
