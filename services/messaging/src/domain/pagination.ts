import { validationError } from '@svc/lib/errors';

// Query parameters arrive as text; a malformed number is a 422 with the parameter as field (as for GET /contacts).

export function intParam(raw: string | undefined, name: string, opts: { min: number; def: number; max?: number }): number {
  if (raw === undefined || raw === '') return opts.def;
  const n = Number(raw);
  if (!/^\s*\d+\s*$/.test(raw) || n < opts.min) {
    throw validationError([{ field: name, message: `${name} must be an integer of at least ${opts.min}`, code: 'invalid_type', received: raw }]);
  }
  return opts.max !== undefined ? Math.min(n, opts.max) : n; // larger page sizes are clamped, as for cursor lists
}

export interface OffsetPage {
  page: number;
  pageSize: number;
  offset: number;
}

/** SPEC.md offset pagination: `page` >= 1 (default 1), `pageSize` >= 1 (default 20, clamped to 100). */
export function offsetPage(page: string | undefined, pageSize: string | undefined): OffsetPage {
  const p = intParam(page, 'page', { min: 1, def: 1 });
  const size = intParam(pageSize, 'pageSize', { min: 1, def: 20, max: 100 });
  return { page: p, pageSize: size, offset: (p - 1) * size };
}

export const totalPages = (total: number, pageSize: number) => Math.ceil(total / pageSize);
