import express, { type RequestHandler } from 'express';
import { AppError, badRequest, validationError } from '@svc/lib/errors';

// Hostile input refused at the edge, before any RPC: PostgreSQL cannot store U+0000 in text or
// jsonb, the JSON-to-protobuf conversion gives up past 100 levels of nesting, and a number beyond
// a double's range (`1e400`, which JSON.parse reads as Infinity) has no google.protobuf.Value. All
// used to surface as 500s deep inside a service. A lone UTF-16 surrogate (`"\ud800"`, valid JSON) is no
// character: UTF-8 (protobuf, PostgreSQL, mail) cannot carry it, and it was silently stored as U+FFFD.

/** Deepest JSON body accepted (objects and arrays both count a level); the custom data rule (10) sits well inside. */
export const MAX_JSON_DEPTH = 32;

const NUL = '\u0000';
const ENCODED_NUL = /%00/i;
const MAX_KEY_IN_PATH = 64;
/** What a field path spells out (`\u0000`, `\ud800`) so that the error itself stays valid text. */
const UNPRINTABLE_IN_KEY = /[\u0000\p{Cs}]/gu;

// ES2024's String.prototype.isWellFormed (Node 20 has it; the project's TypeScript lib is ES2022): no lone
// surrogate. Native and cheap (a one-byte string answers at once), unlike a regular expression per string.
const wellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

/** Refuses a path or query string carrying an encoded NUL (`%00`), keys and values alike. */
export const refuseNulInUrl: RequestHandler = (req, _res, next) => {
  if (ENCODED_NUL.test(req.originalUrl)) throw badRequest('The URL must not contain the NUL character (%00)');
  next();
};

interface Node {
  value: unknown;
  depth: number;
  parent?: Node;
  key?: string | number;
}

const spelled = (key: string): string =>
  key.replace(UNPRINTABLE_IN_KEY, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * `a.b.0.c` for the envelope's `errors[].field`; built only when refusing, keys shortened, NUL and lone surrogates
 * spelled out.
 */
function fieldOf(node: Node): string {
  const parts: string[] = [];
  for (let n: Node | undefined = node; n?.key !== undefined; n = n.parent) {
    parts.unshift(typeof n.key === 'number' ? String(n.key) : spelled(n.key.slice(0, MAX_KEY_IN_PATH)));
  }
  return parts.join('.') || 'body';
}

const nulError = (node: Node) =>
  validationError([
    { field: fieldOf(node), message: 'Text must not contain the NUL character (U+0000)', code: 'invalid_string' },
  ]);

const surrogateError = (node: Node) =>
  validationError([
    {
      field: fieldOf(node),
      message: 'Text must be valid Unicode: a lone UTF-16 surrogate (\\ud800 to \\udfff, unpaired) is no character',
      code: 'invalid_string',
    },
  ]);

const infiniteError = (node: Node) =>
  validationError([
    { field: fieldOf(node), message: "Number is beyond a double's range (about 1.8e308)", code: 'too_big' },
  ]);

/**
 * Whether a body passes the checks below, found without building their field paths: every body is walked
 * by this, and only a refused one again by `refusal` to say why.
 */
function acceptable(body: unknown): boolean {
  if (typeof body === 'string') return !body.includes(NUL) && wellFormed(body);
  if (body === null || typeof body !== 'object') return true;
  const values: unknown[] = [body];
  const depths: number[] = [0];
  while (values.length > 0) {
    const value = values.pop() as object;
    const depth = depths.pop() as number;
    if (depth >= MAX_JSON_DEPTH) return false;
    const array = Array.isArray(value);
    for (const key in value) {
      if (!array && (key.includes(NUL) || !wellFormed(key))) return false;
      const child = (value as Record<string, unknown>)[key];
      if (typeof child === 'string') {
        if (child.includes(NUL) || !wellFormed(child)) return false;
      } else if (typeof child === 'number') {
        if (!Number.isFinite(child)) return false;
      } else if (child !== null && typeof child === 'object') {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return true;
}

/**
 * Walks a parsed JSON body without recursion (a body of a million `[` must not overflow the
 * stack): a 400 past MAX_JSON_DEPTH, a 422 naming the field for a NUL or a lone surrogate in any key or string
 * or for a number JSON.parse read as Infinity.
 */
export function checkJsonBody(body: unknown): void {
  if (!acceptable(body)) refusal(body);
}

/** Throws the refusal of a body `acceptable` refused: the first fault in this walk's order. */
function refusal(body: unknown): void {
  const stack: Node[] = [{ value: body, depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { value, depth } = node;
    if (typeof value === 'string') {
      if (value.includes(NUL)) throw nulError(node);
      if (!wellFormed(value)) throw surrogateError(node);
      continue;
    }
    if (typeof value === 'number' && !Number.isFinite(value)) throw infiniteError(node);
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new AppError({
        code: 'BAD_REQUEST',
        status: 400,
        message: `JSON body nests deeper than ${MAX_JSON_DEPTH} levels`,
        details: { maxDepth: MAX_JSON_DEPTH },
      });
    }
    const entries: [string | number, unknown][] = Array.isArray(value)
      ? value.map((v, i) => [i, v])
      : Object.entries(value);
    for (const [key, child] of entries) {
      const next: Node = { value: child, depth: depth + 1, parent: node, key };
      if (typeof key === 'string' && key.includes(NUL)) throw nulError(next);
      if (typeof key === 'string' && !wellFormed(key)) throw surrogateError(next);
      stack.push(next);
    }
  }
}

/** Routes that take HTML form posts (the subscription pages, RFC 8058 one-click unsubscribe). */
// The subscription pages and the mail viewer's sign-in form (embedded mode).
const FORM_ROUTES = /^\/((unsubscribe|subscribe|manage)\/|dev\/mail\/sign-in$)/;

/**
 * A body that is not JSON (or a multipart upload, or a form post to the subscription pages) is
 * a 415 that says so: `curl -d '{...}'` sends JSON as a form, which used to read as an empty body.
 */
export const requireJsonContentType: RequestHandler = (req, _res, next) => {
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (!hasBody || req.is(['application/json', '+json', 'multipart/form-data'])) return next();
  if (FORM_ROUTES.test(req.path) && req.is('application/x-www-form-urlencoded')) return next();
  throw new AppError({
    code: 'UNSUPPORTED_MEDIA_TYPE',
    status: 415,
    message: `The body must be JSON sent with "Content-Type: application/json" (got ${
      req.get('content-type') ? `"${req.get('content-type')}"` : 'no Content-Type'
    })`,
  });
};

/** express.json followed by the checks above: every JSON body of the gateway is read through this. */
export function jsonBody(limit: string): RequestHandler[] {
  const parse = express.json({ limit });
  const check: RequestHandler = (req, _res, next) => {
    checkJsonBody(req.body);
    next();
  };
  return [requireJsonContentType, parse, check];
}
