import { isCalendarDate, ISO_DATE_TIME } from './calendar-date.js';
import { UNIT_SECONDS, type FilterOperator, type FilterTree, type TimeUnit } from './filter-tree.js';

// The JavaScript back end of the filter tree (filter-tree.ts): one tree over the values of one record, as
// workflows' CONDITION steps evaluate it (the SQL back end is contacts' filter-sql.ts). It takes the value
// operators only (text, comparison, presence, age); the triggered* and segment operators need the contact's
// events and segments, which only the SQL back end reads.
// Values compare as the SQL back end compares them (services/contacts/src/domain/filter-backends.pg.test.ts holds
// both to one table of cases), so a CONDITION step and a segment with the same tree agree on a contact:
// - equals: same JSON type and value ("5" is not 5; an array never equals one of its items); email ignores case;
// - contains: a string by case-insensitive substring, an array by holding an item of the same type and value;
// - a number comparison reads numbers only; any other comparison reads dates (ISO date-times, bare dates as
//   midnight UTC);
// - within / olderThan read full ISO 8601 date-times only (SPEC.md "Type inference");
// - exists: any value but JSON null, the empty string included.
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

/**
 * The value at `keys` below `root`; undefined where a step is not a (non-array) object or lacks the key. Own keys
 * only, as SQL reads stored data: `data.constructor` or `data.__proto__` is a key a contact holds, never Object's.
 */
export function readPath(root: unknown, keys: string[]): unknown {
  let v = root;
  for (const k of keys) {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, k)) return undefined;
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

/** A stored value as text, as PostgreSQL's `#>>` gives it: strings as they are, other JSON as JSON text. */
function text(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Milliseconds of a full ISO 8601 date-time on a real calendar date (offsets allowed), else undefined. */
function dateTime(v: unknown): number | undefined {
  const t = text(v);
  if (t === undefined || !ISO_DATE_TIME.test(t) || !isCalendarDate(t.slice(0, 10))) return undefined;
  // Fractions beyond milliseconds (up to nanoseconds are valid) are cut: Date.parse reads at most three digits.
  return Date.parse(t.replace(/(\.\d{3})\d+/, '$1'));
}

/** A date-time, or a bare calendar date as midnight UTC: what comparisons with a date value read. */
function dateOrDay(v: unknown): number | undefined {
  const t = text(v);
  if (t !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(t) && isCalendarDate(t)) return Date.parse(`${t}T00:00:00Z`);
  return dateTime(v);
}

function same(actual: unknown, expected: unknown, field: string): boolean {
  if (field === 'email' && typeof actual === 'string' && typeof expected === 'string')
    return actual.toLowerCase() === expected.toLowerCase();
  return actual !== undefined && actual !== null && actual === expected;
}

function contains(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(actual)) return actual.some((item) => item === expected);
  return typeof actual === 'string' && actual.toLowerCase().includes(String(expected).toLowerCase());
}

function compare(operator: FilterOperator, a: number, b: number): boolean {
  if (operator === 'greaterThan') return a > b;
  if (operator === 'lessThan') return a < b;
  if (operator === 'greaterThanOrEqual') return a >= b;
  return a <= b;
}

function matches(f: ValueFilter, actual: unknown, now: number): boolean {
  switch (f.operator) {
    case 'exists':
      return actual !== undefined && actual !== null;
    case 'notExists':
      return actual === undefined || actual === null;
    case 'equals':
      return same(actual, f.value, f.field);
    case 'notEquals':
      return !same(actual, f.value, f.field);
    case 'contains':
      return contains(actual, f.value);
    case 'notContains':
      return !contains(actual, f.value);
    case 'within':
    case 'olderThan': {
      const t = dateTime(actual);
      if (t === undefined) return false;
      const limit = now - Number(f.value) * UNIT_SECONDS[f.unit ?? 'days'] * 1000;
      return f.operator === 'within' ? t >= limit : t < limit;
    }
    case 'greaterThan':
    case 'lessThan':
    case 'greaterThanOrEqual':
    case 'lessThanOrEqual': {
      if (typeof f.value === 'number') return typeof actual === 'number' && compare(f.operator, actual, f.value);
      const [a, b] = [dateOrDay(actual), dateOrDay(f.value)];
      return a !== undefined && b !== undefined && compare(f.operator, a, b);
    }
    default:
      throw new Error(`Operator ${f.operator} needs events or segments: the SQL back end evaluates it`);
  }
}

/**
 * Whether the record whose field values `fieldValue` gives matches `tree` (groups short-circuit): the fold of
 * filter-tree.ts (a group's filters then its nested conditions, ANDed; `logic` joins the groups) as plain loops,
 * because it runs per execution and a closure per node costs more than the evaluation (tsx names each one).
 */
export function evaluateFilterTree<F extends ValueFilter>(
  tree: FilterTree<F>,
  fieldValue: (field: string) => unknown,
  now = Date.now(),
): boolean {
  const any = tree.logic === 'OR' && tree.groups.length > 0;
  for (const group of tree.groups) {
    let ok = true;
    for (const f of group.filters) {
      if (!matches(f, fieldValue(f.field), now)) {
        ok = false;
        break;
      }
    }
    if (ok && group.conditions) ok = evaluateFilterTree(group.conditions, fieldValue, now);
    if (ok === any) return any;
  }
  return !any;
}
