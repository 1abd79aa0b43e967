import { badRequest } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';

/**
 * Opaque keyset cursor: the sort it belongs to, and the sort value and id of the last row
 * served. A cursor that does not decode, or belongs to another sort, is a 400.
 */
export interface Cursor {
  sort: string;
  dir: string;
  value: string;
  id: string;
}

const PG_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?(Z|[+-](\d{2})(:?(\d{2}))?)?$/;

/**
 * A timestamptz as PostgreSQL prints it (kept as text so keyset positions keep their microseconds),
 * and a real one: `9999-99-99 99:99:99` has the shape but would fail in PostgreSQL as a 500.
 */
export function isPgTimestamp(v: unknown): v is string {
  const m = typeof v === 'string' ? PG_TIMESTAMP.exec(v) : null;
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const zoneHours = m[9] === undefined ? 0 : Number(m[9]);
  const zoneMinutes = m[11] === undefined ? 0 : Number(m[11]);
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const daysInMonth = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  if (year < 1 || daysInMonth === undefined || day < 1 || day > daysInMonth) return false;
  return hour <= 23 && minute <= 59 && second <= 59 && zoneHours <= 15 && zoneMinutes <= 59;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.sort, c.dir, c.value, c.id])).toString('base64url');
}

/** The first `limit` of `rows` (fetched with one extra to tell whether more follow) and the next cursor. */
export function keysetPage<T>(
  rows: T[],
  limit: number,
  cursorOf: (last: T) => Cursor,
): { page: T[]; hasMore: boolean; cursor: string } {
  const hasMore = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { page, hasMore, cursor: hasMore && last ? encodeCursor(cursorOf(last)) : '' };
}

/** `sort` names the list (and its timestamp sorts) so a cursor of one list is refused by another. */
export function decodeCursor(raw: string, sort: string, dir: string): Cursor {
  const invalid = badRequest(
    'Invalid cursor: pass the cursor of the previous page unchanged, with the same sort and dir',
  );
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || !parsed.every((p) => typeof p === 'string')) throw invalid;
  const [s, d, value, id] = parsed as string[];
  // PostgreSQL text cannot hold U+0000: such a value can only be forged.
  if (s !== sort || d !== dir || !isUuid(id) || value.length > 1000 || value.includes('\u0000')) throw invalid;
  if ((sort === 'createdAt' || sort === 'events') && !isPgTimestamp(value)) throw invalid;
  return { sort: s, dir: d, value, id };
}
