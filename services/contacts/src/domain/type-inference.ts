import { isPlainObject } from './custom-data.js';

// SPEC.md "Type inference": a field's type is fixed by the first non-null value a project sends.

export type FieldType = 'number' | 'boolean' | 'date' | 'string';

// YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[.sss]Z, exactly as SPEC.md writes it.
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(?:\.\d{3})?Z)?$/;

export function inferType(value: unknown): FieldType | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string' && isCalendarDate(value)) return 'date';
  return 'string';
}

function isCalendarDate(s: string): boolean {
  const m = DATE_PATTERN.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year === 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  if (m[4] === undefined) return true;
  return Number(m[4]) <= 23 && Number(m[5]) <= 59 && Number(m[6]) <= 59;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Leaves of the data object as dotted paths (`profile.tier`); arrays are leaves, not walked. */
export function flattenPaths(data: Record<string, unknown>): Array<{ path: string; value: unknown }> {
  const leaves: Array<{ path: string; value: unknown }> = [];
  collectLeaves(data, '', leaves);
  return leaves;
}

function collectLeaves(
  node: Record<string, unknown>,
  prefix: string,
  out: Array<{ path: string; value: unknown }>,
): void {
  for (const [key, value] of Object.entries(node)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (isPlainObject(value)) collectLeaves(value, path, out);
    else out.push({ path, value });
  }
}

/** Types to persist for paths seen for the first time with a non-null value; known types never change. */
export function newFieldTypes(
  known: ReadonlyMap<string, FieldType>,
  data: Record<string, unknown>,
): Array<{ path: string; type: FieldType }> {
  const found = new Map<string, FieldType>();
  for (const { path, value } of flattenPaths(data)) {
    // Known paths first: most writes add no field, and typing a value (the date pattern) costs more.
    if (known.has(path) || found.has(path)) continue;
    const type = inferType(value);
    // First value wins within one payload too (a literal "a.b" key and {a: {b}} share a path).
    if (type !== null) found.set(path, type);
  }
  return [...found].map(([path, type]) => ({ path, type }));
}
