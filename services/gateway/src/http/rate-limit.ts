import type { RequestHandler } from 'express';
import { AppError } from '@svc/lib/errors';
import type { RateLimiter } from '@svc/lib/rate-limit';

const WINDOW_MS = 60_000;

/** Per-project request budget (SPEC.md: 1000 per minute); runs after key authentication. */
export function rateLimit(limiter: RateLimiter, perMinute: number): RequestHandler {
  return async (req, res, next) => {
    const d = await limiter.hit(`project:${req.projectId}`, perMinute, WINDOW_MS);
    res.setHeader('X-RateLimit-Limit', String(d.limit));
    res.setHeader('X-RateLimit-Remaining', String(d.remaining));
    if (!d.allowed) {
      throw new AppError({
        code: 'RATE_LIMIT_EXCEEDED',
        status: 429,
        message: `Rate limit of ${perMinute} requests per minute exceeded`,
        details: { retryAfter: d.retryAfter, limit: d.limit },
      });
    }
    next();
  };
}
