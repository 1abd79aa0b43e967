import { badRequest } from '@svc/lib/errors';
import { RESERVED_DATA_KEYS, isPlainObject } from './custom-data.js';
import { isValidEmail } from './email-address.js';

// SPEC.md "CSV import": how header cells and row cells become a contact patch.

export type CsvRow =
  | { ok: true; email: string; data: Record<string, unknown> }
  | { ok: false; error: { row: number; email: string; reason: 'invalid_email' } };

// SPEC.md drops these columns silently, `subscribed` included: new contacts are created subscribed
// and an existing contact's state is never changed by an import.
const DROPPED_COLUMNS = new Set(
  ['id', 'subscribed', 'createdAt', 'updatedAt', ...RESERVED_DATA_KEYS].map((c) => c.toLowerCase()),
);

const BOOLEANS = new Map([['true', true], ['yes', true], ['false', false], ['no', false]]);
// No leading zero (except a lone 0 before the point), no plus sign, no exponent.
const PLAIN_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

/** Types one cell; undefined means "ignored" (an empty cell never overwrites stored data). */
export function typeCsvCell(raw: string): unknown {
  const cell = raw.trim();
  if (cell === '') return undefined;
  const bool = BOOLEANS.get(cell.toLowerCase());
  if (bool !== undefined) return bool;
  if (PLAIN_NUMBER.test(cell)) {
    const n = Number(cell);
    // Long digit strings (phone numbers, external ids) would lose digits as a double: keep them as text.
    if (Number.isSafeInteger(Math.trunc(n))) return n;
  }
  return cell; // ISO dates stay strings; type inference types them as dates
}

/** 400 when the file has no `email` column (matched case-insensitively). */
export function validateCsvHeader(header: string[]): void {
  emailColumn(normalizeHeader(header));
}

/** Turns one data row into the contact upsert it asks for, or the row error SPEC.md reports. */
export function rowToContact(header: string[], cells: string[], rowNumber: number): CsvRow {
  const names = normalizeHeader(header);
  const emailIndex = emailColumn(names);
  const email = (cells[emailIndex] ?? '').trim();
  // A missing email is reported with the same reason as a malformed one: `invalid_email` is the one SPEC.md shows.
  if (!isValidEmail(email)) return { ok: false, error: { row: rowNumber, email, reason: 'invalid_email' } };

  const data: Record<string, unknown> = {};
  names.forEach((name, i) => {
    if (i === emailIndex || name === '' || DROPPED_COLUMNS.has(name.toLowerCase())) return;
    const value = typeCsvCell(cells[i] ?? '');
    if (value !== undefined) setPath(data, columnPath(name), value);
  });
  return { ok: true, email, data };
}

function normalizeHeader(header: string[]): string[] {
  return header.map((cell, i) => (i === 0 ? cell.replace(/^\uFEFF/, '') : cell).trim());
}

function emailColumn(names: string[]): number {
  const index = names.findIndex((name) => name.toLowerCase() === 'email');
  if (index < 0) throw badRequest('CSV file must have an email column', { column: 'email' });
  return index;
}

// `profile.tier` addresses data.profile.tier (rule 9); a malformed dotted name is kept as one key.
function columnPath(name: string): string[] {
  const parts = name.split('.');
  return parts.some((p) => p === '') ? [name] : parts;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = Object.hasOwn(node, key) ? node[key] : undefined;
    node = isPlainObject(next) ? next : setOwn(node, key, {});
  }
  setOwn(node, path[path.length - 1], value);
}

// defineProperty, not assignment: a `__proto__` column must become a key, not a prototype.
function setOwn<T>(node: Record<string, unknown>, key: string, value: T): T {
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
  return value;
}
