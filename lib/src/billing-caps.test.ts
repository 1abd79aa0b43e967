import { BillingCaps, billingPeriod, type BillingLimits } from './billing-caps.js';
import { AppError } from './errors.js';
import { capturingLogger } from './test-logger.js';
import { MemoryUsageCounters } from './usage-counters.js';

function caps(limits: BillingLimits, records: { used: number }, counterTtlMs = 60_000) {
  let reads = 0;
  const c = new BillingCaps({
    limits: async () => limits,
    used: async () => {
      reads++;
      return records.used;
    },
    counters: new MemoryUsageCounters(),
    logger: capturingLogger().logger,
    counterTtlMs,
  });
  return { c, reads: () => reads };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err) => err as AppError,
  );

describe('BillingCaps', () => {
  test('a project without a cap never reads its records', async () => {
    const { c, reads } = caps({}, { used: 10 });
    await c.reserve('p', 'emails', 5);
    expect(reads()).toBe(0);
  });

  test('takes from the cap once seeded from the records; the unit beyond it is 402 with what was used', async () => {
    const { c, reads } = caps({ emails: 3 }, { used: 1 });
    await c.reserve('p', 'emails', 2);
    const err = await refusal(c.reserve('p', 'emails', 1));
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ status: 402, code: 'BILLING_LIMIT_REACHED' });
    expect(err?.details).toMatchObject({ category: 'emails', used: 3, limit: 3, requested: 1 });
    expect(reads()).toBe(1);
  });

  test('a release gives back what failed work took; added() counts work that happened', async () => {
    const { c } = caps({ contacts: 2 }, { used: 0 });
    const release = await c.reserve('p', 'contacts', 2);
    await release();
    await c.reserve('p', 'contacts', 1);
    await c.added('p', 'contacts', 1);
    expect(await c.usage('p', 'contacts')).toEqual({ used: 2, limit: 2 });
    expect(await refusal(c.reserve('p', 'contacts', 1))).toMatchObject({ status: 402 });
  });

  test('an expired counter is read again from the records (drift is corrected)', async () => {
    const records = { used: 0 };
    const { c, reads } = caps({ events: 5 }, records, 1);
    await c.reserve('p', 'events', 1);
    records.used = 5;
    await new Promise((r) => setTimeout(r, 5));
    expect(await refusal(c.reserve('p', 'events', 1))).toMatchObject({ details: { used: 5 } });
    expect(reads()).toBeGreaterThanOrEqual(2);
  });

  test('the period is the calendar month in UTC', () => {
    const p = billingPeriod(new Date('2026-02-14T23:30:00-05:00'));
    expect(p).toMatchObject({ key: '2026-02' });
    expect(p.start.toISOString()).toBe('2026-02-01T00:00:00.000Z');
    expect(p.end.toISOString()).toBe('2026-03-01T00:00:00.000Z');
  });
});
