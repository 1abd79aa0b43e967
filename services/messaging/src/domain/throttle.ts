/**
 * Per-project token bucket (SPEC.md: "Email sending is throttled per project"). One second
 * of burst; `take` answers how long to wait when the bucket is empty. Kept per worker
 * process: with N replicas a project can reach N times the rate.
 */
export class ProjectThrottle {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perSecond: number) {}

  /** 0 when a message may go now, else milliseconds until the next token. */
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
}
