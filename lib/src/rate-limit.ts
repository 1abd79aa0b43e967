import type { Redis } from 'ioredis';

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
  constructor(private readonly redis: Redis, private readonly prefix = 'rl') {}

  async hit(key: string, limit: number, windowMs: number, now = Date.now()): Promise<RateDecision> {
    const windowStart = now - (now % windowMs);
    const k = `${this.prefix}:${key}:${windowStart}`;
    const [[, count]] = (await this.redis.multi().incr(k).pexpire(k, windowMs + 1000).exec()) as [[Error | null, number]];
    return decide(count, limit, windowStart, windowMs, now);
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
