import { validationError } from '@svc/lib/errors';

type Query = Record<string, unknown>;

const first = (v: unknown) => (Array.isArray(v) ? v[0] : v);

/** Cursor-list `limit`: default 20, clamped to 1..100 (SPEC.md); a non-integer is a 422. */
export function limitParam(q: Query, def = 20, max = 100): number {
  const raw = first(q.limit);
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n))
    throw validationError([
      { field: 'limit', message: 'limit must be an integer', code: 'invalid_type', received: raw },
    ]);
  return Math.min(max, Math.max(1, n));
}

/**
 * An integer query parameter that must lie in [min, max] (422 otherwise, naming the range), so an
 * out-of-range value such as `days=999999999999` never reaches an int32 protobuf field.
 */
export function rangeParam(q: Query, name: string, range: { def: number; min: number; max: number }): number {
  const raw = first(q[name]);
  if (raw === undefined || raw === '') return range.def;
  const n = typeof raw === 'string' && /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < range.min || n > range.max) {
    const message = `${name} must be an integer from ${range.min} to ${range.max}`;
    throw validationError([{ field: name, message, code: 'invalid_type', received: String(raw).slice(0, 100) }]);
  }
  return n;
}

export function stringParam(q: Query, name: string): string | undefined {
  const v = first(q[name]);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function boolParam(q: Query, name: string): boolean | undefined {
  const v = stringParam(q, name);
  if (v === undefined) return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw validationError([
    { field: name, message: `${name} must be true or false`, code: 'invalid_enum_value', received: v },
  ]);
}
