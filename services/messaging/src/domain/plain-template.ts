import { type Liquid, type Template, TokenKind, TypeGuards } from 'liquidjs';
import { FALLBACK_FILTER } from './template-rewrite.js';

// Most subjects and bodies are text with plain variable outputs (`Hi {{firstName}}`, `{{plan ?? "free"}}`).
// liquidjs renders each node through generators, about 8 us per render of such a template; rendering its parsed
// pieces directly is about ten times cheaper. Only what reads the same as liquidjs (with render.ts's options) is
// taken: text, a variable path of plain names, the `??` fallback with a quoted literal, the HTML escape. A value
// that is not a string, number, boolean or missing answers undefined at render and liquidjs renders it.

/** Text as written, or an output: a variable path, its `??` literal, and whether it is HTML-escaped. */
type Piece = string | { path: string[]; fallback?: string; escaped: boolean };

/** Keys liquidjs reads in its own way (array and string size, first and last items). */
const SPECIAL_KEYS = new Set(['size', 'first', 'last']);

/** The pieces of `templates` when every one is text or a plain output; undefined otherwise. */
export function plainPieces(templates: Template[], liquid: Liquid): Piece[] | undefined {
  const pieces: Piece[] = [];
  for (const t of templates) {
    if (t.token.kind === TokenKind.HTML && typeof (t as { str?: unknown }).str === 'string') {
      pieces.push((t as unknown as { str: string }).str);
      continue;
    }
    if (t.token.kind !== TokenKind.Output) return undefined;
    const { initial, filters } = (t as unknown as { value: import('liquidjs').Value }).value;
    const [access, ...rest] = initial.postfix;
    if (rest.length || !access || !TypeGuards.isPropertyAccessToken(access) || access.variable) return undefined;
    const path: string[] = [];
    for (const prop of access.props) {
      if (!TypeGuards.isWordToken(prop) || SPECIAL_KEYS.has(prop.content)) return undefined;
      path.push(prop.content);
    }
    // The escape liquidjs appends to every output of the HTML engine (outputEscape), last of the filters.
    const { outputEscape } = liquid.options;
    const last = filters[filters.length - 1] as unknown as { handler: unknown } | undefined;
    const escaped = outputEscape !== undefined && last?.handler === outputEscape;
    const own = escaped ? filters.slice(0, -1) : filters;
    if (own.length > 1) return undefined;
    let fallback: string | undefined;
    if (own.length === 1) {
      const [arg, ...more] = own[0].args;
      if (own[0].name !== FALLBACK_FILTER || more.length || !arg || Array.isArray(arg)) return undefined;
      if (!TypeGuards.isQuotedToken(arg as never)) return undefined;
      fallback = (arg as unknown as { content: string }).content;
    }
    pieces.push({ path, fallback, escaped });
  }
  return pieces;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };

/** An own property of a plain object (liquidjs' ownPropertyOnly), or `fail` for anything liquidjs reads its way. */
function read(obj: unknown, key: string, fail: symbol): unknown {
  if (obj === null || obj === undefined) return obj;
  if (typeof obj !== 'object' || Array.isArray(obj)) return fail;
  const proto = Object.getPrototypeOf(obj);
  if (proto !== Object.prototype && proto !== null) return fail;
  if (typeof (obj as { toLiquid?: unknown }).toLiquid === 'function') return fail;
  const value = Object.hasOwn(obj, key) ? (obj as Record<string, unknown>)[key] : undefined;
  return typeof value === 'function' ? fail : value;
}

const FAIL = Symbol('liquidjs');

/** The pieces rendered with `vars` (render.ts's scope: the variables, and `data` for all of them), or undefined. */
export function renderPieces(pieces: Piece[], vars: Record<string, unknown>): string | undefined {
  let out = '';
  for (const piece of pieces) {
    if (typeof piece === 'string') {
      out += piece;
      continue;
    }
    const [root, ...props] = piece.path;
    let value = root === 'data' ? vars : read(vars, root, FAIL);
    for (const key of props) {
      if (value === FAIL) break;
      value = read(value, key, FAIL);
    }
    if (value === FAIL) return undefined;
    if (piece.fallback !== undefined && (value === null || value === undefined)) value = piece.fallback;
    let text: string;
    if (typeof value === 'string') text = value;
    else if (value === null || value === undefined) text = '';
    else if (typeof value === 'number' || typeof value === 'boolean') text = String(value);
    else return undefined;
    out += piece.escaped ? text.replace(/[&<>"']/g, (c) => ESCAPES[c]) : text;
  }
  return out;
}
