import { AppError } from './errors.js';
import type { Logger } from './logger.js';
import { SingleFlight } from './single-flight.js';
import type { UsageCounters } from './usage-counters.js';

/** What a project's billing caps count (README "Billing"). */
export type BillingCategory = 'emails' | 'contacts' | 'events';

/** A cap per category; undefined is unlimited. */
export type BillingLimits = Partial<Record<BillingCategory, number>>;

const LABELS: Record<BillingCategory, string> = {
  emails: 'email',
  contacts: 'contact',
  events: 'tracked event',
};

/** Emails and events are counted per calendar month (UTC); contacts are the contacts the project holds. */
export function billingPeriod(now = new Date()): { start: Date; end: Date; key: string } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end, key: start.toISOString().slice(0, 7) };
}

/** 402: the work would go beyond the project's cap; says what was used. */
export function billingLimitReached(category: BillingCategory, used: number, limit: number, requested: number) {
  const period = billingPeriod();
  const scope = category === 'contacts' ? '' : ' this month';
  return new AppError({
    code: 'BILLING_LIMIT_REACHED',
    status: 402,
    message:
      `The project's ${LABELS[category]} limit is reached: ${used} of ${limit} used${scope}` +
      (requested > 1 ? `, ${requested} more requested` : ''),
    details: {
      category,
      used,
      limit,
      requested,
      ...(category === 'contacts'
        ? {}
        : { periodStart: period.start.toISOString(), periodEnd: period.end.toISOString() }),
    },
    suggestion: 'Raise the limit with PUT /users/@me/projects/{id}/billing-limits',
  });
}

export interface BillingCapsOptions {
  /** The project's caps (identity). */
  limits(projectId: string): Promise<BillingLimits>;
  /** The exact usage from the service's own records, since the period start (contacts: ignore `since`). */
  used(projectId: string, category: BillingCategory, since: Date): Promise<number>;
  counters: UsageCounters;
  logger: Logger;
  /** How long a project's caps are cached (a changed cap applies within this). */
  limitsTtlMs?: number;
  /** How long a counter lives before it is re-read from the records (drift from failed work is corrected). */
  counterTtlMs?: number;
}

/**
 * Enforcement of the billing caps where the work happens, cheap on hot paths: a project without
 * a cap costs a cached lookup; with one, a counter (Redis, shared by replicas, or in-process)
 * seeded from a COUNT of the service's records and re-read every `counterTtlMs`.
 */
export class BillingCaps {
  private readonly cache = new Map<string, { limits: BillingLimits; expiresAt: number }>();
  /** One read of a project's caps at a time: the requests that find them expired together share it. */
  private readonly reading = new SingleFlight<BillingLimits>();
  private readonly limitsTtlMs: number;
  private readonly counterTtlMs: number;

  constructor(private readonly o: BillingCapsOptions) {
    this.limitsTtlMs = o.limitsTtlMs ?? 5000;
    this.counterTtlMs = o.counterTtlMs ?? 60_000;
  }

  /** The cap, or undefined when unlimited. Identity unreachable: the last known caps (else none), logged. */
  async limitOf(projectId: string, category: BillingCategory): Promise<number | undefined> {
    const hit = this.cache.get(projectId);
    if (hit && hit.expiresAt > Date.now()) return hit.limits[category];
    return (await this.reading.run(projectId, () => this.readLimits(projectId, hit?.limits)))[category];
  }

  private async readLimits(projectId: string, last: BillingLimits | undefined): Promise<BillingLimits> {
    let limits: BillingLimits;
    try {
      limits = await this.o.limits(projectId);
    } catch (err) {
      this.o.logger.warn({ err, projectId }, 'billing caps unavailable: using the last known caps');
      limits = last ?? {};
    }
    if (this.cache.size >= 50_000) this.cache.clear();
    this.cache.set(projectId, { limits, expiresAt: Date.now() + this.limitsTtlMs });
    return limits;
  }

  /** Forget a project's cached caps (its caps changed). */
  invalidate(projectId: string): void {
    this.cache.delete(projectId);
    this.reading.forget(projectId);
  }

  private key(projectId: string, category: BillingCategory): string {
    return `billing:${category}:${projectId}:${category === 'contacts' ? 'all' : billingPeriod().key}`;
  }

  private async seed(projectId: string, category: BillingCategory): Promise<void> {
    const used = await this.o.used(projectId, category, billingPeriod().start);
    await this.o.counters.seed(this.key(projectId, category), used, this.counterTtlMs);
  }

  /**
   * Takes `n` units of the cap before the work is done, or throws 402 BILLING_LIMIT_REACHED.
   * Returns the release to call when the work then fails (nothing to release when unlimited).
   */
  async reserve(projectId: string, category: BillingCategory, n: number): Promise<() => Promise<void>> {
    const limit = n > 0 ? await this.limitOf(projectId, category) : undefined;
    if (limit === undefined) return async () => undefined;
    const key = this.key(projectId, category);
    let r = await this.o.counters.addCapped(key, n, limit);
    if (!r) {
      await this.seed(projectId, category);
      r = await this.o.counters.addCapped(key, n, limit);
    }
    // Still unseeded (expired at once): count from the records, as exact as a counter.
    if (!r) {
      const used = await this.o.used(projectId, category, billingPeriod().start);
      r = { allowed: used + n <= limit, used };
    }
    if (!r.allowed) throw billingLimitReached(category, r.used, limit, n);
    return () => this.o.counters.add(key, -n);
  }

  /** Usage against the cap, without taking any: `{used, limit}`, or undefined when unlimited. */
  async usage(projectId: string, category: BillingCategory): Promise<{ used: number; limit: number } | undefined> {
    const limit = await this.limitOf(projectId, category);
    if (limit === undefined) return undefined;
    const r = await this.o.counters.addCapped(this.key(projectId, category), 0, Number.MAX_SAFE_INTEGER);
    if (r) return { used: r.used, limit };
    await this.seed(projectId, category);
    const again = await this.o.counters.addCapped(this.key(projectId, category), 0, Number.MAX_SAFE_INTEGER);
    return { used: again?.used ?? (await this.o.used(projectId, category, billingPeriod().start)), limit };
  }

  /** Counts work that already happened (e.g. contacts a write created), when the project has a cap. */
  async added(projectId: string, category: BillingCategory, n: number): Promise<void> {
    if (n <= 0 || (await this.limitOf(projectId, category)) === undefined) return;
    await this.o.counters.add(this.key(projectId, category), n);
  }
}
