import { createHash } from 'node:crypto';
import type { RateLimiter } from '@svc/lib/rate-limit';
import type { RedisLink } from '@svc/lib/redis';

/**
 * Which open and click hits are recorded. The tokens are public and never expire, so a replayed pixel or link must
 * not become an event and activity rows per hit: at most one open per email per open window, one click per (email,
 * link) per click window, and at most `perClientPerMinute` recorded hits per client address across all emails. The
 * answer (the pixel, the redirect) never depends on this; only what is recorded does.
 */
export interface TrackingHitPolicy {
  /** 0: every open is recorded. */
  openWindowMs: number;
  /** 0: every click is recorded. */
  clickWindowMs: number;
  /** 0: no per-client budget. */
  perClientPerMinute: number;
}

/** Marks a key for `windowMs`: true when it was not marked (the first hit of its window). */
export interface HitMarks {
  firstIn(key: string, windowMs: number): Promise<boolean>;
}

const MAX_LOCAL_MARKS = 100_000;

/** In-process marks: the whole truth with one messaging process, each replica's own while Redis is down. */
export class MemoryHitMarks implements HitMarks {
  private readonly until = new Map<string, number>();

  async firstIn(key: string, windowMs: number, now = Date.now()): Promise<boolean> {
    const at = this.until.get(key);
    if (at !== undefined && at > now) return false;
    this.until.delete(key); // re-inserted last: the map stays ordered by expiry (one window length per kind)
    if (this.until.size >= MAX_LOCAL_MARKS) this.evict(now);
    this.until.set(key, now + windowMs);
    return true;
  }

  /** Expired marks go; if the map is still full, the oldest do (a forgotten mark only records one more hit). */
  private evict(now: number): void {
    for (const [k, at] of this.until) {
      if (at > now && this.until.size < MAX_LOCAL_MARKS * 0.9) return;
      this.until.delete(k);
    }
  }
}

/** Marks shared by every messaging replica: one `SET NX PX` per hit, the key expiring with its window. */
export class RedisHitMarks implements HitMarks {
  constructor(
    private readonly redis: RedisLink,
    private readonly prefix: string,
  ) {}

  async firstIn(key: string, windowMs: number): Promise<boolean> {
    const set = await this.redis.run((r) => r.set(`${this.prefix}:${key}`, '1', 'PX', windowMs, 'NX'));
    return set === 'OK';
  }
}

/**
 * Redis down, frozen or erring: each replica marks in-process instead (a repeated hit may then be recorded once per
 * replica per window). The public endpoints never fail for it, and a real first open is never lost for it.
 */
export class FailOpenHitMarks implements HitMarks {
  constructor(
    private readonly shared: HitMarks,
    private readonly local: HitMarks = new MemoryHitMarks(),
  ) {}

  async firstIn(key: string, windowMs: number): Promise<boolean> {
    try {
      return await this.shared.firstIn(key, windowMs);
    } catch {
      return this.local.firstIn(key, windowMs);
    }
  }
}

const urlKey = (url: string) => createHash('sha256').update(url).digest('base64url').slice(0, 22);

export class TrackingHits {
  constructor(
    private readonly marks: HitMarks,
    private readonly clients: RateLimiter,
    private readonly policy: TrackingHitPolicy,
  ) {}

  recordOpen(emailId: string, ip: string | undefined): Promise<boolean> {
    return this.admit(`o:${emailId}`, this.policy.openWindowMs, ip);
  }

  recordClick(emailId: string, url: string, ip: string | undefined): Promise<boolean> {
    return this.admit(`c:${emailId}:${urlKey(url)}`, this.policy.clickWindowMs, ip);
  }

  /** The repeat check first: a repeated hit costs no client budget. */
  private async admit(key: string, windowMs: number, ip: string | undefined): Promise<boolean> {
    if (windowMs > 0 && !(await this.marks.firstIn(key, windowMs))) return false;
    if (!this.policy.perClientPerMinute || !ip) return true;
    const d = await this.clients.hit(`ip:${ip}`, this.policy.perClientPerMinute, 60_000);
    return d.allowed;
  }
}
