import type { RedisLink } from './redis.js';
import { MemoryTokenBuckets, RedisTokenBuckets, type BucketShape, type TokenBuckets } from './token-bucket.js';

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

interface Slice {
  /** Tokens this replica took from the shared bucket and has not spent yet. */
  tokens: number;
  /** What the shared bucket held after the last take (the tokens held here count as spent). */
  remaining: number;
  /** The shared bucket was empty: refuse locally until its next token is due. */
  deniedUntil: number;
  refill?: Promise<void>;
}

/**
 * A replica's slice of the shared budget: tokens are taken from the shared buckets in chunks (1%
 * of the budget, at most `maxChunk`; 1 for budgets under 200) and spent here, so most requests
 * cost no round trip to Redis. Concurrent requests wait for one take. A refused take is
 * remembered until the bucket's next token is due. The cost: a replica may hold up to one chunk
 * that others cannot spend, and spend it later (a burst one chunk above the bucket's capacity).
 */
export class SlicedRateLimiter implements RateLimiter {
  private readonly slices = new Map<string, Slice>();

  constructor(
    private readonly buckets: TokenBuckets,
    private readonly maxChunk = 100,
  ) {}

  async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const chunk = Math.max(1, Math.min(this.maxChunk, Math.floor(limit / 100)));
    let s = this.slices.get(key);
    if (!s) {
      if (this.slices.size >= 100_000) this.sweep();
      s = { tokens: 0, remaining: 0, deniedUntil: 0 };
      this.slices.set(key, s);
    }
    for (;;) {
      if (s.tokens > 0) {
        s.tokens--;
        return { allowed: true, limit, remaining: s.remaining, retryAfter: 1 };
      }
      const wait = s.deniedUntil - Date.now();
      if (wait > 0) return { allowed: false, limit, remaining: 0, retryAfter: Math.max(1, Math.ceil(wait / 1000)) };
      s.refill ??= this.take(s, key, { capacity: limit, perMs: limit / windowMs }, chunk);
      await s.refill; // a failed take (Redis down) fails this request: the caller decides (FailOpenRateLimiter)
    }
  }

  private async take(s: Slice, key: string, shape: BucketShape, chunk: number): Promise<void> {
    try {
      const g = await this.buckets.take(key, shape, chunk);
      s.tokens += g.granted;
      s.remaining = g.remaining;
      s.deniedUntil = g.granted ? 0 : Date.now() + g.waitMs;
    } finally {
      s.refill = undefined;
    }
  }

  /** Slices holding nothing carry no information: drop them. */
  private sweep(): void {
    const now = Date.now();
    for (const [k, s] of this.slices) if (!s.tokens && !s.refill && s.deniedUntil <= now) this.slices.delete(k);
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
