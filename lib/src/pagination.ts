import { validationError } from './errors.js';

// Query parameters arrive as text; a malformed number is a 422 with the parameter as field (as for GET /contacts).

/** `max` clamps larger values (page sizes, as for cursor lists); `ceiling` refuses them (positions). */
export function intParam(
  raw: string | undefined,
  name: string,
  opts: { min: number; def: number; max?: number; ceiling?: number },
): number {
  if (raw === undefined || raw === '') return opts.def;
  const n = Number(raw);
  if (!/^\s*\d+\s*$/.test(raw) || n < opts.min || (opts.ceiling !== undefined && n > opts.ceiling)) {
    const range = opts.ceiling !== undefined ? `from ${opts.min} to ${opts.ceiling}` : `of at least ${opts.min}`;
    throw validationError([
      {
        field: name,
        message: `${name} must be an integer ${range}`,
        code: 'invalid_type',
        received: raw.slice(0, 100),
      },
    ]);
  }
  return opts.max !== undefined ? Math.min(n, opts.max) : n;
}

/** Deepest page of an offset list: keeps `(page - 1) * pageSize` a small integer for PostgreSQL's OFFSET. */
export const MAX_PAGE = 1_000_000;

export interface OffsetPage {
  page: number;
  pageSize: number;
  offset: number;
}

/** SPEC.md offset pagination: `page` 1 to MAX_PAGE (default 1), `pageSize` >= 1 (default 20, clamped to 100). */
export function offsetPage(page: string | undefined, pageSize: string | undefined): OffsetPage {
  const p = intParam(page, 'page', { min: 1, def: 1, ceiling: MAX_PAGE });
  const size = intParam(pageSize, 'pageSize', { min: 1, def: 20, max: 100 });
  return { page: p, pageSize: size, offset: (p - 1) * size };
}

export const totalPages = (total: number, pageSize: number) => Math.ceil(total / pageSize);

/** The columns an offset list of named resources sorts by (SPEC.md: `name`, `createdAt`, `updatedAt`). */
export type NamedSortColumn = 'name' | 'created_at' | 'updated_at';
const NAMED_SORTS: Record<string, NamedSortColumn> = { name: 'name', createdAt: 'created_at', updatedAt: 'updated_at' };

/**
 * The column of a `sort` query value; anything unrecognised falls back to created_at. Own keys only: `__proto__` or
 * `constructor` would otherwise read Object.prototype into an ORDER BY.
 */
export const namedSortColumn = (sort: string | undefined): NamedSortColumn =>
  sort && Object.hasOwn(NAMED_SORTS, sort) ? NAMED_SORTS[sort] : 'created_at';
