import type { RedisLink } from './redis.js';

/**
 * Short-lived marks: `swap` sets a key's value for `ttlMs` and answers the value it held before if that had not
 * expired yet. Each swap restarts the key's time, so "the previous hit was less than ttlMs ago" slides with the hits
 * (a token bucket would refill at a fixed pace and let every ttlMs one hit through).
 */
export interface RecentMarks {
  swap(key: string, value: string, ttlMs: number, now?: number): Promise<string | undefined>;
}

/** In-process marks: embedded mode, and the insurance when Redis is unreachable (one replica's view). */
export class MemoryRecentMarks implements RecentMarks {
  private readonly marks = new Map<string, { value: string; until: number }>();

  async swap(key: string, value: string, ttlMs: number, now = Date.now()): Promise<string | undefined> {
    const before = this.marks.get(key);
    if (!before && this.marks.size >= 100_000) this.sweep(now);
    this.marks.set(key, { value, until: now + ttlMs });
    return before && before.until > now ? before.value : undefined;
  }

  private sweep(now: number): void {
    for (const [k, m] of this.marks) if (m.until <= now) this.marks.delete(k);
  }
}

/** Marks in Redis shared by every replica, one `SET ... PX ... GET` each; keys are `<prefix>:<key>`. */
export class RedisRecentMarks implements RecentMarks {
  constructor(
    private readonly redis: RedisLink,
    private readonly prefix: string,
  ) {}

  async swap(key: string, value: string, ttlMs: number): Promise<string | undefined> {
    const ms = Math.max(1, Math.ceil(ttlMs));
    const before = await this.redis.run((r) => r.set(`${this.prefix}:${key}`, value, 'PX', ms, 'GET'));
    return before ?? undefined;
  }
}

/** DESIGN.md decision 4, as FailOpenRateLimiter: while Redis fails, each replica keeps its own marks. */
export class FailOpenRecentMarks implements RecentMarks {
  constructor(
    private readonly shared: RecentMarks,
    private readonly local: RecentMarks = new MemoryRecentMarks(),
  ) {}

  async swap(key: string, value: string, ttlMs: number, now?: number): Promise<string | undefined> {
    try {
      return await this.shared.swap(key, value, ttlMs, now);
    } catch {
      return this.local.swap(key, value, ttlMs, now);
    }
  }
}
