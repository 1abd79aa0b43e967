import { isCalendarDate } from '@svc/lib/calendar-date';
import { isPlainObject } from './custom-data.js';

// SPEC.md "Type inference": a field's type is fixed by the first non-null value a project sends.

export type FieldType = 'number' | 'boolean' | 'date' | 'string';

export function inferType(value: unknown): FieldType | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string' && isCalendarDate(value)) return 'date';
  return 'string';
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
