import { badRequest } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { TimeseriesBucketRow, TimeseriesStore } from '../store/timeseries-store.js';

// GET /analytics/timeseries: the project's email lifecycle per UTC day or hour over a range. Parameters
// arrive as the client sent them; anything malformed is a 400 naming the parameter.

export type TimeseriesInterval = 'day' | 'hour';

const HOUR_MS = 3_600_000;
export const STEP_MS: Record<TimeseriesInterval, number> = { day: 24 * HOUR_MS, hour: HOUR_MS };
/** Buckets of the default range (30 days) and the most a request may span (366 days, or 31 days by hour). */
export const DEFAULT_BUCKETS: Record<TimeseriesInterval, number> = { day: 30, hour: 30 * 24 };
export const MAX_BUCKETS: Record<TimeseriesInterval, number> = { day: 366, hour: 31 * 24 };
const MIN_YEAR = 1970;

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** A UTC calendar day that exists (2024-02-30 does not), as its start in ms; null otherwise. */
function dayStart(y: string, m: string, d: string): number | null {
  const ms = Date.UTC(Number(y), Number(m) - 1, Number(d));
  const back = new Date(ms);
  const exists =
    back.getUTCFullYear() === Number(y) && back.getUTCMonth() === Number(m) - 1 && back.getUTCDate() === Number(d);
  return exists && Number(y) >= MIN_YEAR ? ms : null;
}

/**
 * `YYYY-MM-DD` (UTC; its first millisecond for `from`, its last for `to`, so a day is included whole) or an
 * RFC 3339 date-time with `Z` or an offset. Anything else, including impossible dates, is a 400.
 */
export function parseInstant(raw: string, parameter: 'from' | 'to'): Date {
  const bad = () =>
    badRequest(`${parameter} must be a date (YYYY-MM-DD) or an ISO 8601 date-time with a time zone`, {
      parameter,
      received: raw.slice(0, 100),
    });
  const value = raw.trim();
  const date = DATE_ONLY.exec(value);
  if (date) {
    const start = dayStart(date[1], date[2], date[3]);
    if (start === null) throw bad();
    return new Date(parameter === 'from' ? start : start + STEP_MS.day - 1);
  }
  const dt = DATE_TIME.exec(value);
  if (!dt) throw bad();
  const [, y, mo, d, h, mi, s = '0', frac = '', zone, oh = '0', om = '0'] = dt;
  const start = dayStart(y, mo, d);
  if (start === null || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59 || Number(oh) > 23 || Number(om) > 59)
    throw bad();
  const offsetMin = zone.toUpperCase() === 'Z' ? 0 : (zone[0] === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const ms = Math.floor(Number(`0${frac || '.0'}`) * 1000);
  return new Date(start + ((Number(h) * 60 + Number(mi)) * 60 + Number(s)) * 1000 + ms - offsetMin * 60_000);
}

export function parseInterval(raw: string | undefined): TimeseriesInterval {
  const v = (raw ?? '').trim().toLowerCase();
  if (v === '') return 'day';
  if (v === 'day' || v === 'hour') return v;
  throw badRequest('interval must be day or hour', { parameter: 'interval', received: (raw ?? '').slice(0, 100) });
}

/** The start of the UTC day or hour holding `t`. */
export const bucketOf = (t: Date, interval: TimeseriesInterval) =>
  new Date(Math.floor(t.getTime() / STEP_MS[interval]) * STEP_MS[interval]);

export interface TimeseriesRange {
  interval: TimeseriesInterval;
  /** First bucket's start. */
  from: Date;
  /** Last bucket's end (exclusive). */
  to: Date;
  buckets: number;
}

/**
 * Every bucket from the one holding `from` to the one holding `to`. Defaults: `to` now, `from` so that the range
 * is the last 30 days' buckets (30 days, or 720 hours). `from` after `to` and ranges over MAX_BUCKETS are 400s.
 */
export function timeseriesRange(
  q: { from?: string; to?: string; interval?: string },
  now = new Date(),
): TimeseriesRange {
  const interval = parseInterval(q.interval);
  const step = STEP_MS[interval];
  const to = q.to ? parseInstant(q.to, 'to') : now;
  const last = bucketOf(to, interval).getTime();
  const from = q.from ? parseInstant(q.from, 'from') : new Date(last - (DEFAULT_BUCKETS[interval] - 1) * step);
  if (from.getTime() > to.getTime())
    throw badRequest('from must not be after to', { from: from.toISOString(), to: to.toISOString() });
  const first = bucketOf(from, interval).getTime();
  const buckets = (last - first) / step + 1;
  if (buckets > MAX_BUCKETS[interval]) {
    const span = interval === 'day' ? `${MAX_BUCKETS.day} days` : `${MAX_BUCKETS.hour} hours (31 days)`;
    throw badRequest(`The range spans ${buckets} ${interval}s; at most ${span} by ${interval}`, {
      interval,
      buckets,
      maxBuckets: MAX_BUCKETS[interval],
    });
  }
  return { interval, from: new Date(first), to: new Date(last + step), buckets };
}

export interface Timeseries extends TimeseriesRange {
  data: TimeseriesBucketRow[];
}

export class EmailTimeseries {
  constructor(private readonly store: TimeseriesStore) {}

  async get(
    projectId: string,
    q: { from?: string; to?: string; interval?: string; campaignId?: string },
  ): Promise<Timeseries> {
    const range = timeseriesRange(q);
    if (q.campaignId !== undefined && !isUuid(q.campaignId))
      throw badRequest('campaignId must be a campaign id', {
        parameter: 'campaignId',
        received: String(q.campaignId).slice(0, 100),
      });
    return { ...range, data: await this.store.buckets(projectId, { ...range, campaignId: q.campaignId }) };
  }
}
