import type { BucketShape, Grant, TokenBuckets } from '@svc/lib/token-bucket';

/** What the delivery worker asks before sending one message of a project. */
export interface SendThrottle {
  /** 0 when a message may go now, else milliseconds until the next token. */
  take(projectId: string): number | Promise<number>;
  /**
   * Up to `count` messages of a claimed batch at once: how many may go now, and when the rest may
   * (milliseconds; 0 when all were granted).
   */
  takeMany(projectId: string, count: number): Promise<{ granted: number; waitMs: number }>;
}

/**
 * Per-project token bucket (SPEC.md: "Email sending is throttled per project"). One second
 * of burst; `take` answers how long to wait when the bucket is empty. Kept per worker
 * process: with N replicas a project can reach N times the rate. Used alone without Redis,
 * and as the insurance of SharedProjectThrottle while Redis is unreachable.
 */
export class ProjectThrottle implements SendThrottle {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perSecond: number) {}

  take(projectId: string, now = Date.now()): number {
    let b = this.buckets.get(projectId);
    if (!b) {
      b = { tokens: this.perSecond, at: now };
      this.buckets.set(projectId, b);
      if (this.buckets.size > 10_000) this.buckets.clear();
    }
    b.tokens = Math.min(this.perSecond, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) / this.perSecond) * 1000);
  }

  async takeMany(projectId: string, count: number, now = Date.now()): Promise<{ granted: number; waitMs: number }> {
    for (let granted = 0; granted < count; granted++) {
      const waitMs = this.take(projectId, now);
      if (waitMs > 0) return { granted, waitMs };
    }
    return { granted: count, waitMs: 0 };
  }
}

/** Tokens taken from Redis but not used within this long are dropped: they would add to a later burst. */
const HOLD_MS = 1000;

/**
 * SEND_RATE_PER_SECOND across every messaging replica: one bucket per project in Redis
 * (one second of burst, as ProjectThrottle). Tokens are taken in chunks of a tenth of a
 * second's budget (at most 10), so Redis sees one round trip per chunk, not per message.
 * When Redis fails the in-process throttle decides (each replica then allows the full rate).
 */
export class SharedProjectThrottle implements SendThrottle {
  private readonly held = new Map<string, { tokens: number; until: number }>();
  private readonly chunk: number;
  /** One second of burst, refilled at the rate. */
  private readonly shape: BucketShape;

  constructor(
    private readonly buckets: TokenBuckets,
    perSecond: number,
    private readonly local: ProjectThrottle = new ProjectThrottle(perSecond),
    chunk = Math.min(10, Math.ceil(perSecond / 10)),
  ) {
    this.chunk = Math.max(1, Math.min(chunk, perSecond));
    this.shape = { capacity: perSecond, perMs: perSecond / 1000 };
  }

  async take(projectId: string): Promise<number> {
    if (this.fromHeld(projectId)) return 0;
    let grant: Grant;
    try {
      grant = await this.buckets.take(projectId, this.shape, this.chunk);
    } catch {
      return this.local.take(projectId);
    }
    if (grant.granted === 0) return grant.waitMs;
    // Concurrent lanes may each bring a chunk: add to what is held rather than replace it.
    if (grant.granted > 1) this.hold(projectId, grant.granted - 1);
    return 0;
  }

  /** Held tokens first, then the rest of the batch in one Redis round trip (nothing is held back for later). */
  async takeMany(projectId: string, count: number): Promise<{ granted: number; waitMs: number }> {
    let held = 0;
    while (held < count && this.fromHeld(projectId)) held++;
    if (held === count) return { granted: count, waitMs: 0 };
    let grant: Grant;
    try {
      grant = await this.buckets.take(projectId, this.shape, count - held);
    } catch {
      const local = await this.local.takeMany(projectId, count - held);
      return { granted: held + local.granted, waitMs: local.waitMs };
    }
    const granted = held + grant.granted;
    return { granted, waitMs: granted < count ? Math.max(1, grant.waitMs) : 0 };
  }

  private fromHeld(projectId: string): boolean {
    const h = this.held.get(projectId);
    if (!h) return false;
    if (h.until < Date.now()) {
      this.held.delete(projectId);
      return false;
    }
    if (--h.tokens === 0) this.held.delete(projectId);
    return true;
  }

  private hold(projectId: string, tokens: number): void {
    const h = this.held.get(projectId);
    const until = Date.now() + HOLD_MS;
    if (this.held.size > 10_000) this.held.clear();
    if (h && h.until >= Date.now()) this.held.set(projectId, { tokens: h.tokens + tokens, until });
    else this.held.set(projectId, { tokens, until });
  }
}
