import { foldFilterTree, UNIT_SECONDS, type FilterOperator, type FilterTree, type TimeUnit } from './filter-tree.js';

// The JavaScript back end of the filter tree (filter-tree.ts): one tree over the values of one record, as
// workflows' CONDITION steps evaluate it (the SQL back end is contacts' filter-sql.ts). It takes the value
// operators only (text, comparison, presence, age); the triggered* and segment operators need the contact's
// events and segments, which only the SQL back end reads.
// Values compare loosely, the way users write filters: "5" equals 5, "true" equals true, emails ignore case.

/** A filter this back end evaluates: `field` is whatever the caller's lookup reads. */
export interface ValueFilter {
  field: string;
  operator: FilterOperator;
  value?: string | number | boolean;
  unit?: TimeUnit;
}

/** The contact fields filters read: email, subscribed, createdAt, updatedAt, data.<path>. */
export interface FilterContact {
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAt?: Date;
  updatedAt?: Date;
}

/** The value at `keys` below `root`; undefined where a step is not a (non-array) object. */
export function readPath(root: unknown, keys: string[]): unknown {
  let v = root;
  for (const k of keys) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** A contact field's value as filters read it (email in lower case, dates as ISO text); undefined for others. */
export function contactFieldValue(contact: FilterContact, field: string): unknown {
  if (field === 'email') return contact.email.toLowerCase();
  if (field === 'subscribed') return contact.subscribed;
  if (field === 'createdAt') return contact.createdAt?.toISOString();
  if (field === 'updatedAt') return contact.updatedAt?.toISOString();
  if (field.startsWith('data.')) return readPath(contact.data, field.slice(5).split('.'));
  return undefined;
}

const num = (v: unknown): number | undefined => {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
};
const time = (v: unknown): number | undefined => (typeof v === 'string' ? Date.parse(v) : Number.NaN) || undefined;

function same(actual: unknown, expected: unknown, field: string): boolean {
  if (actual === undefined || actual === null) return false;
  if (field === 'email' && typeof expected === 'string') return actual === expected.toLowerCase();
  if (typeof actual === typeof expected) return actual === expected;
  if (typeof actual === 'number' || typeof expected === 'number') return num(actual) === num(expected);
  return String(actual) === String(expected);
}

function matches(f: ValueFilter, actual: unknown, now: number): boolean {
  const present = actual !== undefined && actual !== null && actual !== '';
  switch (f.operator) {
    case 'exists':
      return present;
    case 'notExists':
      return !present;
    case 'equals':
      return same(actual, f.value, f.field);
    case 'notEquals':
      return !same(actual, f.value, f.field);
    case 'contains':
    case 'notContains': {
      const has = Array.isArray(actual)
        ? actual.some((a) => same(a, f.value, f.field))
        : present && String(actual).toLowerCase().includes(String(f.value).toLowerCase());
      return f.operator === 'contains' ? has : !has;
    }
    case 'within':
    case 'olderThan': {
      const t = time(actual);
      if (t === undefined) return false;
      const limit = now - Number(f.value) * UNIT_SECONDS[f.unit ?? 'days'] * 1000;
      return f.operator === 'within' ? t >= limit : t < limit;
    }
    case 'greaterThan':
    case 'lessThan':
    case 'greaterThanOrEqual':
    case 'lessThanOrEqual': {
      const [a, b] = [num(actual), num(f.value)];
      if (a === undefined || b === undefined) return false;
      if (f.operator === 'greaterThan') return a > b;
      if (f.operator === 'lessThan') return a < b;
      if (f.operator === 'greaterThanOrEqual') return a >= b;
      return a <= b;
    }
    default:
      throw new Error(`Operator ${f.operator} needs events or segments: the SQL back end evaluates it`);
  }
}

/** Whether the record whose field values `fieldValue` gives matches `tree` (groups short-circuit). */
export function evaluateFilterTree<F extends ValueFilter>(
  tree: FilterTree<F>,
  fieldValue: (field: string) => unknown,
  now = Date.now(),
): boolean {
  return foldFilterTree<() => boolean, F>(tree, {
    filter: (f) => () => matches(f, fieldValue(f.field), now),
    all: (parts) => () => parts.every((p) => p()),
    any: (parts) => () => parts.some((p) => p()),
  })();
}
