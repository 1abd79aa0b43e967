import { isAppError } from '@svc/lib/errors';
import { parseInstant, timeseriesRange } from './email-timeseries.js';

const NOW = new Date('2026-03-15T10:20:30.000Z');

function refusal(f: () => unknown): { status: number; message: string; details?: Record<string, unknown> } {
  try {
    f();
  } catch (err) {
    if (isAppError(err)) return { status: err.status, message: err.message, details: err.details };
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('parseInstant', () => {
  test('a date is its whole UTC day: the first millisecond for from, the last for to', () => {
    expect(parseInstant('2026-02-28', 'from').toISOString()).toBe('2026-02-28T00:00:00.000Z');
    expect(parseInstant('2026-02-28', 'to').toISOString()).toBe('2026-02-28T23:59:59.999Z');
  });

  test('date-times need a zone; offsets are applied', () => {
    expect(parseInstant('2026-02-28T10:00:00Z', 'from').toISOString()).toBe('2026-02-28T10:00:00.000Z');
    expect(parseInstant('2026-02-28T10:00+02:00', 'from').toISOString()).toBe('2026-02-28T08:00:00.000Z');
    expect(parseInstant('2026-02-28T23:30:00.250-01:30', 'to').toISOString()).toBe('2026-03-01T01:00:00.250Z');
  });

  test.each([
    'yesterday',
    '1',
    '2026-02-30',
    '2026-13-01',
    '2026-2-1',
    '2026-02-28T10:00:00',
    '2026-02-28T24:00:00Z',
    '1969-12-31',
    '',
  ])('%p is a 400 naming the parameter', (raw) => {
    const r = refusal(() => parseInstant(raw, 'from'));
    expect(r.status).toBe(400);
    expect(r.details).toMatchObject({ parameter: 'from' });
  });
});

describe('timeseriesRange', () => {
  test('defaults: the last 30 UTC days, today included', () => {
    const r = timeseriesRange({}, NOW);
    expect(r).toMatchObject({ interval: 'day', buckets: 30 });
    expect(r.from.toISOString()).toBe('2026-02-14T00:00:00.000Z');
    expect(r.to.toISOString()).toBe('2026-03-16T00:00:00.000Z');
  });

  test('by hour the default is the last 720 hours, the current one included', () => {
    const r = timeseriesRange({ interval: 'HOUR' }, NOW);
    expect(r.buckets).toBe(720);
    expect(r.to.toISOString()).toBe('2026-03-15T11:00:00.000Z');
    expect(r.from.getTime()).toBe(r.to.getTime() - 720 * 3_600_000);
  });

  test('every bucket from the one holding from to the one holding to', () => {
    const days = timeseriesRange({ from: '2026-01-01', to: '2026-01-03' }, NOW);
    expect([days.from.toISOString(), days.to.toISOString(), days.buckets]).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-04T00:00:00.000Z',
      3,
    ]);
    const hours = timeseriesRange({ from: '2026-01-01T10:30:00Z', to: '2026-01-01T12:00:00Z', interval: 'hour' }, NOW);
    expect([hours.from.toISOString(), hours.buckets]).toEqual(['2026-01-01T10:00:00.000Z', 3]);
    expect(timeseriesRange({ from: '2026-01-01', to: '2026-01-01', interval: 'hour' }, NOW).buckets).toBe(24);
    expect(timeseriesRange({ from: '2026-03-10' }, NOW).buckets).toBe(6); // to: now
  });

  test('bad interval, from after to and ranges over the caps are 400s', () => {
    expect(refusal(() => timeseriesRange({ interval: 'week' }, NOW)).details).toMatchObject({
      parameter: 'interval',
    });
    expect(refusal(() => timeseriesRange({ from: '2026-01-02', to: '2026-01-01' }, NOW)).status).toBe(400);
    expect(refusal(() => timeseriesRange({ from: '2026-03-16' }, NOW)).status).toBe(400); // from in the future
    expect(timeseriesRange({ from: '2024-01-01', to: '2024-12-31' }, NOW).buckets).toBe(366);
    expect(refusal(() => timeseriesRange({ from: '2024-01-01', to: '2025-01-01' }, NOW)).details).toMatchObject({
      buckets: 367,
      maxBuckets: 366,
    });
    expect(timeseriesRange({ from: '2026-01-01', to: '2026-01-31', interval: 'hour' }, NOW).buckets).toBe(744);
    expect(
      refusal(() => timeseriesRange({ from: '2026-01-01', to: '2026-02-01T00:00:00Z', interval: 'hour' }, NOW)).details,
    ).toMatchObject({ buckets: 745, maxBuckets: 744 });
  });
});
