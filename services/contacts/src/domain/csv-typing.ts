import { AppError, badRequest } from '@svc/lib/errors';
import { RESERVED_DATA_KEYS, checkDataLimits, checkDataSize, isPlainObject, pathWithinLimits } from './custom-data.js';
import { isValidEmail } from './email-address.js';

// SPEC.md "CSV import": how header cells and row cells become a contact patch.

/** Columns a file may have (header cells, email and dropped columns included). */
export const MAX_CSV_COLUMNS = 1000;
/** Characters of a refused row's email kept in the job's `errors` (the cell may be megabytes). */
const REPORTED_EMAIL_LENGTH = 320;

export interface RowError {
  row: number;
  email: string;
  /** `invalid_email`, `invalid_character` (a NUL), `too_big` (the custom-data limits), `too_many_fields`. */
  reason: string;
}

/** `json` is `data` serialized (the limits check measures it), what an insert stores. */
export type CsvRow =
  | { ok: true; email: string; data: Record<string, unknown>; json: string }
  | { ok: false; error: RowError };

/** A row's error as the job reports it: the email cut short and free of NULs, which PostgreSQL cannot store. */
export function rowError(row: number, email: string, reason: string): RowError {
  return { row, email: email.slice(0, REPORTED_EMAIL_LENGTH).replaceAll('\u0000', '\uFFFD'), reason };
}

// SPEC.md drops these columns silently, `subscribed` included: new contacts are created subscribed
// and an existing contact's state is never changed by an import.
const DROPPED_COLUMNS = new Set(
  ['id', 'subscribed', 'createdAt', 'updatedAt', ...RESERVED_DATA_KEYS].map((c) => c.toLowerCase()),
);

const BOOLEANS = new Map([
  ['true', true],
  ['yes', true],
  ['false', false],
  ['no', false],
]);
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

/** 400 when the file has no `email` column (matched case-insensitively) or too many columns. */
export function validateCsvHeader(header: string[]): void {
  if (header.length > MAX_CSV_COLUMNS) {
    const message = `CSV files may have at most ${MAX_CSV_COLUMNS} columns (got ${header.length})`;
    throw badRequest(message, { maxColumns: MAX_CSV_COLUMNS });
  }
  emailColumn(normalizeHeader(header));
}

/**
 * 400 when two data columns write the same place: a column named twice, or `a` beside `a.b` (rule 9's nested
 * path). Each row's later cell would silently overwrite the earlier one.
 */
export function checkRepeatedColumns(header: string[]): void {
  const names = normalizeHeader(header);
  const emailIndex = emailColumn(names);
  const columns = new Map<string, string>(); // a column's path (JSON) -> its name
  const parents = new Map<string, string>(); // every path a column nests inside -> that column's name
  names.forEach((name, index) => {
    if (index === emailIndex || name === '' || DROPPED_COLUMNS.has(name.toLowerCase())) return;
    const path = columnPath(name);
    const key = JSON.stringify(path);
    if (columns.has(key)) throw badRequest(`The CSV header names the column "${name}" twice`, { column: name });
    const inside = parents.get(key);
    const outer = path.slice(0, -1).flatMap((_, i) => columns.get(JSON.stringify(path.slice(0, i + 1))) ?? []);
    const other = inside ?? outer[0];
    if (other !== undefined) {
      const [a, b] = inside === undefined ? [other, name] : [name, other];
      throw badRequest(`The CSV columns "${a}" and "${b}" both write data.${a}`, { columns: [a, b] });
    }
    columns.set(key, name);
    for (let i = 1; i < path.length; i++) parents.set(JSON.stringify(path.slice(0, i)), name);
  });
}

/** Turns one data row into the contact upsert it asks for, or the row error SPEC.md reports. */
export function rowToContact(header: string[], cells: string[], rowNumber: number): CsvRow {
  return csvRowReader(header)(cells, rowNumber);
}

/**
 * rowToContact with the header read once: a file's rows share its column plan (email column,
 * dropped columns, dotted paths), so a row only types its cells.
 */
export function csvRowReader(header: string[]): (cells: string[], rowNumber: number) => CsvRow {
  const names = normalizeHeader(header);
  const emailIndex = emailColumn(names);
  const columns = names.flatMap((name, index) =>
    index === emailIndex || name === '' || DROPPED_COLUMNS.has(name.toLowerCase())
      ? []
      : [{ index, path: columnPath(name), nul: name.includes('\u0000') }],
  );
  // A row's keys and depth come from the header alone: when every column obeys the rules, every row
  // does, and only its size is left to check.
  const sizeOnly = columns.every((column) => pathWithinLimits(column.path));
  return (cells, rowNumber) => {
    const email = (cells[emailIndex] ?? '').trim();
    // A missing email is reported with the same reason as a malformed one: `invalid_email` is the one SPEC.md shows.
    if (!isValidEmail(email)) return { ok: false, error: rowError(rowNumber, email, 'invalid_email') };
    const data: Record<string, unknown> = {};
    let nul = false;
    for (const column of columns) {
      const value = typeCsvCell(cells[column.index] ?? '');
      if (value === undefined) continue;
      nul ||= column.nul || (typeof value === 'string' && value.includes('\u0000'));
      setPath(data, column.path, value);
    }
    if (nul) return { ok: false, error: rowError(rowNumber, email, 'invalid_character') };
    const checked = checkLimits(data, sizeOnly);
    if ('error' in checked) return { ok: false, error: rowError(rowNumber, email, checked.error) };
    return { ok: true, email, data, json: checked.json };
  };
}

// The API's custom-data rules (size, key length, depth) hold for a row as for a request body.
function checkLimits(data: Record<string, unknown>, sizeOnly: boolean): { json: string } | { error: string } {
  try {
    return { json: sizeOnly ? checkDataSize(data) : checkDataLimits(data) };
  } catch (err) {
    if (err instanceof AppError && err.status === 422) return { error: err.errors?.[0]?.code ?? 'invalid_data' };
    throw err;
  }
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

// A `__proto__` column must become a key, not a prototype: defineProperty for it, plain (cheaper) assignment otherwise.
function setOwn<T>(node: Record<string, unknown>, key: string, value: T): T {
  if (key !== '__proto__') node[key] = value;
  else Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
  return value;
}
