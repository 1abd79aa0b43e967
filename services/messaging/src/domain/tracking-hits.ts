import { createHash } from 'node:crypto';
import type { RateLimiter } from '@svc/lib/rate-limit';

/**
 * Which open and click hits are recorded. The tokens are public and the links in mail must keep working, so a
 * replayed pixel or link must not become an event and activity rows per hit: nothing past `recordForMs` after the
 * token was issued (the email was queued), at most one open per email per open window, one click per (email, link)
 * per click window, and at most `perClientPerMinute` recorded hits per client address across all emails. The answer
 * (the pixel, the redirect) never depends on this; only what is recorded does.
 */
export interface TrackingHitPolicy {
  /** TRACKING_RECORD_DAYS in ms; 0: no age limit. */
  recordForMs: number;
  /** 0: every open is recorded. */
  openWindowMs: number;
  /** 0: every click is recorded. */
  clickWindowMs: number;
  /** 0: no per-client budget. */
  perClientPerMinute: number;
}

const urlKey = (url: string) => createHash('sha256').update(url).digest('base64url').slice(0, 22);

/**
 * A repeat is a second hit within its window: a rate limit of 1 per window on the hit's key (a token bucket of one
 * token refilled over the window, so the next hit after a recorded one counts once the window has passed).
 */
export class TrackingHits {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly policy: TrackingHitPolicy,
  ) {}

  /** `issuedAt`: the token's `iat` (Unix seconds); a token without one (minted before it existed) has no age. */
  async recordOpen(emailId: string, ip: string | undefined, issuedAt?: number): Promise<boolean> {
    return !this.aged(issuedAt) && this.admit(`o:${emailId}`, this.policy.openWindowMs, ip);
  }

  async recordClick(emailId: string, url: string, ip: string | undefined, issuedAt?: number): Promise<boolean> {
    return !this.aged(issuedAt) && this.admit(`c:${emailId}:${urlKey(url)}`, this.policy.clickWindowMs, ip);
  }

  /**
   * True when a hit of a token issued at `issuedAt` records nothing (past `recordForMs`). Decided from the signed token
   * alone: an old link replayed costs no limiter call and no database read.
   */
  aged(issuedAt: number | undefined): boolean {
    if (!this.policy.recordForMs || typeof issuedAt !== 'number') return false;
    return Date.now() - issuedAt * 1000 > this.policy.recordForMs;
  }

  /** The repeat check first: a repeated hit costs no client budget. */
  private async admit(key: string, windowMs: number, ip: string | undefined): Promise<boolean> {
    if (windowMs > 0 && !(await this.limiter.hit(key, 1, windowMs)).allowed) return false;
    if (!this.policy.perClientPerMinute || !ip) return true;
    const d = await this.limiter.hit(`ip:${ip}`, this.policy.perClientPerMinute, 60_000);
    return d.allowed;
  }
}
