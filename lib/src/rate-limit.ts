import type { RedisLink } from './redis.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  retryAfter: number;
}

export interface RateLimiter {
  hit(key: string, limit: number, windowMs: number, now?: number): Promise<RateDecision>;
}

function decide(count: number, limit: number, windowStart: number, windowMs: number, now: number): RateDecision {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    retryAfter: Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000)),
  };
}

/** Fixed windows aligned to the clock: one INCR per request, shared by every gateway replica. */
export class RedisRateLimiter implements RateLimiter {
  constructor(private readonly redis: RedisLink, private readonly prefix = 'rl') {}

  async hit(key: string, limit: number, windowMs: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % windowMs);
    const k = `${this.prefix}:${key}:${windowStart}`;
    const replies = await this.redis.run((r) => r.multi().incr(k).pexpire(k, windowMs + 1000).exec());
    const [err, count] = replies![0] as [Error | null, number];
    if (err) throw err;
    return decide(count, limit, windowStart, windowMs, now);
  }
}

/**
 * DESIGN.md decision 4: when the shared limiter fails (Redis down, frozen or erring), count
 * in-process instead, so a cache outage never becomes an API outage. Each replica then
 * allows the full budget on its own until Redis is back (RedisLink logs the change).
 */
export class FailOpenRateLimiter implements RateLimiter {
  constructor(private readonly shared: RateLimiter, private readonly local: RateLimiter = new MemoryRateLimiter()) {}

  async hit(key: string, limit: number, windowMs: number, now = Date.now()): Promise<RateDecision> {
    try {
      return await this.shared.hit(key, limit, windowMs, now);
    } catch {
      return this.local.hit(key, limit, windowMs, now);
    }
  }
}

/** In-process windows for embedded mode (correct for one instance). */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  async hit(key: string, limit: number, windowMs: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % windowMs);
    let w = this.windows.get(key);
    if (!w || w.start !== windowStart) {
      w = { start: windowStart, count: 0 };
      this.windows.set(key, w);
      if (this.windows.size > 100_000) this.sweep(windowStart);
    }
    w.count++;
    return decide(w.count, limit, windowStart, windowMs, now);
  }

  private sweep(current: number): void {
    for (const [k, w] of this.windows) if (w.start < current) this.windows.delete(k);
  }
}
