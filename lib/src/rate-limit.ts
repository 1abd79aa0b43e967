import type { RedisLink } from './redis.js';
import { MemoryTokenBuckets, RedisTokenBuckets, type TokenBuckets } from './token-bucket.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the next request would be allowed (at least 1). */
  retryAfter: number;
}

export interface RateLimiter {
  hit(key: string, limit: number, windowMs: number, now?: number): Promise<RateDecision>;
}

/**
 * `limit` requests per `windowMs` as a token bucket: a full bucket allows a burst of `limit`,
 * then requests are allowed as the budget refills (limit / windowMs), with no reset edge where
 * two windows' worth pass back to back.
 */
class BucketRateLimiter implements RateLimiter {
  constructor(private readonly buckets: TokenBuckets) {}

  async hit(key: string, limit: number, windowMs: number, now?: number): Promise<RateDecision> {
    const g = await this.buckets.take(key, { capacity: limit, perMs: limit / windowMs }, 1, now);
    return {
      allowed: g.granted === 1,
      limit,
      remaining: g.remaining,
      retryAfter: Math.max(1, Math.ceil(g.waitMs / 1000)),
    };
  }
}

/** Shared by every gateway replica: one atomic script per request (lib/src/token-bucket.ts). */
export class RedisRateLimiter extends BucketRateLimiter {
  constructor(redis: RedisLink, prefix = 'rl') {
    super(new RedisTokenBuckets(redis, prefix));
  }
}

/** In-process buckets for embedded mode (correct for one instance). */
export class MemoryRateLimiter extends BucketRateLimiter {
  constructor() {
    super(new MemoryTokenBuckets());
  }
}

/**
 * DESIGN.md decision 4: when the shared limiter fails (Redis down, frozen or erring), count
 * in-process instead, so a cache outage never becomes an API outage. Each replica then
 * allows the full budget on its own until Redis is back (RedisLink logs the change).
 */
export class FailOpenRateLimiter implements RateLimiter {
  constructor(
    private readonly shared: RateLimiter,
    private readonly local: RateLimiter = new MemoryRateLimiter(),
  ) {}

  async hit(key: string, limit: number, windowMs: number, now = Date.now()): Promise<RateDecision> {
    try {
      return await this.shared.hit(key, limit, windowMs, now);
    } catch {
      return this.local.hit(key, limit, windowMs, now);
    }
  }
}
