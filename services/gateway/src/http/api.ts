import { extendZodWithOpenApi, OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import type { ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { type Express, type RequestHandler, Router } from 'express';
import { z } from 'zod';
import { parseOrThrow } from '@svc/lib/zod-errors';
import { objectBody } from './body.js';
import { PROJECT_HEADER, SESSION_COOKIE } from './auth.js';

extendZodWithOpenApi(z);

/**
 * Every route the gateway serves is declared once, through an `ApiRouter`: the declaration
 * registers the Express route and is the route's entry in `GET /openapi.json` (a route cannot
 * exist without being documented; test/openapi.test.ts walks the app to check).
 *
 * - `auth`: `secret` (sk_ key), `public` (pk_ or sk_ key: /v1/track), `session` (dashboard
 *   cookie), `webhook` (X-Webhook-Secret), `none`. It documents the security scheme; the guard
 *   itself is still one of the route's handlers (guards.secret, auth.session(), ...), and
 *   test/openapi.test.ts checks that every route with an `auth` answers 401 without credentials.
 * - `query`, `body`: zod schemas of the request. With `validate: true` the body (and query) is
 *   parsed with them before the handlers run (422 VALIDATION_ERROR through lib/src/zod-errors.ts)
 *   and `req.body` / `req.validQuery` hold the parsed values. Routes older than this module keep
 *   the validators their contract tests pin (http/body.ts, http/query.ts, the JSON-message
 *   mapper), so their schemas document what those validators accept.
 * - `responses`: status -> zod schema of a JSON answer, `null` for an empty answer, or a
 *   `{description, content}` for other media types. Error answers are the shared `Error`
 *   envelope: list the statuses a route adds in `errors` (401/403/429 follow from `auth`).
 */
export type Auth = 'secret' | 'public' | 'session' | 'webhook' | 'none';
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export type ResponseDoc =
  | z.ZodTypeAny
  | null
  | { description: string; content?: Record<string, z.ZodTypeAny>; headers?: Record<string, string> };

export interface Operation {
  summary: string;
  description?: string;
  tag: string;
  auth: Auth;
  /** Path parameters; each `:name` of the path is a string unless declared here. */
  params?: z.AnyZodObject;
  query?: z.AnyZodObject;
  body?: z.ZodTypeAny;
  /** Media type of `body` (default application/json). */
  bodyType?: string;
  bodyRequired?: boolean;
  /** Parse `body` and `query` with the schemas before the handlers (new routes: true). */
  validate?: boolean;
  responses: Record<number, ResponseDoc>;
  /** Error statuses this route answers besides the ones its auth implies. */
  errors?: number[];
  /** Honours Idempotency-Key (every API-key POST/PATCH/PUT/DELETE). */
  idempotent?: boolean;
}

export interface DeclaredOperation extends Operation {
  method: Method;
  path: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    /** The query as the route's `query` schema parsed it (routes declared with `validate: true`). */
    validQuery?: Record<string, unknown>;
  }
}

/** Marks an Express router with the operations declared on it. */
export const OPERATIONS = Symbol.for('svc.gateway.operations');
/** Marks a router whose routes are deliberately not API operations (with the reason). */
const EXCLUDED = Symbol.for('svc.gateway.not-in-document');

/**
 * Mounts a plain router whose routes are pages, not API operations (the web console): they stay out of
 * the document, and the coverage test lists them as excluded instead of failing on them.
 */
export function notInDocument(router: Router, reason: string): Router {
  Object.defineProperty(router, EXCLUDED, { value: reason });
  return router;
}

export class ApiRouter {
  readonly router: Router = Router();
  readonly operations: DeclaredOperation[] = [];

  constructor() {
    Object.defineProperty(this.router, OPERATIONS, { value: this.operations });
  }

  get(path: string, op: Operation, ...handlers: RequestHandler[]): this {
    return this.route('get', path, op, handlers);
  }
  post(path: string, op: Operation, ...handlers: RequestHandler[]): this {
    return this.route('post', path, op, handlers);
  }
  put(path: string, op: Operation, ...handlers: RequestHandler[]): this {
    return this.route('put', path, op, handlers);
  }
  patch(path: string, op: Operation, ...handlers: RequestHandler[]): this {
    return this.route('patch', path, op, handlers);
  }
  delete(path: string, op: Operation, ...handlers: RequestHandler[]): this {
    return this.route('delete', path, op, handlers);
  }

  private route(method: Method, path: string, op: Operation, handlers: RequestHandler[]): this {
    this.operations.push({ ...op, method, path });
    const chain = [...handlers];
    if (op.validate) {
      // After the guards (authentication first), before the last handler.
      chain.splice(chain.length - 1, 0, validator(op));
    }
    this.router[method](path, ...chain);
    return this;
  }
}

function validator(op: Operation): RequestHandler {
  return (req, _res, next) => {
    if (op.query) req.validQuery = parseOrThrow(op.query, req.query);
    if (op.body && (op.bodyType ?? 'application/json') === 'application/json') {
      req.body = parseOrThrow(op.body, objectBody(req.body));
    }
    next();
  };
}

// ---- Shared schemas ----

export const FieldErrorSchema = z
  .object({
    field: z.string().openapi({ example: 'email' }),
    message: z.string(),
    code: z.string().openapi({ example: 'invalid_string' }),
    received: z.unknown().optional(),
  })
  .openapi('FieldError');

export const ErrorSchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.string().openapi({ example: 'VALIDATION_ERROR' }),
      message: z.string(),
      statusCode: z.number().int(),
      requestId: z.string().openapi({ example: 'req_4f1c0a0e6b2b4a5f8c3d2e1f0a9b8c7d' }),
      errors: z.array(FieldErrorSchema).optional(),
      details: z.record(z.unknown()).optional(),
      suggestion: z.string().optional(),
    }),
    timestamp: z.string().datetime(),
  })
  .openapi('Error', { description: 'The error envelope of every endpoint (SPEC.md).' });

/** SPEC.md's flat `{error}` body: some 400s of `POST /contacts`, `POST /templates` and `POST /segments`. */
export const FlatErrorSchema = z
  .object({ error: z.string().openapi({ example: 'email is required' }) })
  .openapi('FlatError', { description: 'The flat 400 body SPEC.md gives a few create endpoints.' });

/** The 400 of a create endpoint that answers some 400s flat (`what`) and the others (malformed JSON) enveloped. */
export const flatBadRequest = (what: string): ResponseDoc => ({
  description: `Bad request: ${what} is the flat {error} body; malformed JSON is the Error envelope`,
  content: { 'application/json': z.union([FlatErrorSchema, ErrorSchema]) },
});

/** The `{success: true, data}` answer of the public /v1 endpoints. */
export const wrappedSchema = <T extends z.ZodTypeAny>(data: T) => z.object({ success: z.literal(true), data });

/** A cursor page `{data, cursor, hasMore}`. */
export const cursorPage = <T extends z.ZodTypeAny>(item: T) =>
  z.object({ data: z.array(item), cursor: z.string().nullable(), hasMore: z.boolean() });

export const isoDate = z.string().datetime().openapi({ example: '2026-01-01T00:00:00.000Z' });
export const id = z.string().openapi({ example: '3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d' });
export const json = z.record(z.unknown()).openapi({ type: 'object', additionalProperties: true });
/** A filter tree (segment condition, campaign audienceCondition); the segments rules decide what is valid. */
export const filterCondition = z
  .record(z.unknown())
  .openapi('FilterCondition', { description: 'A filter tree (SPEC.md "Filter tree"): groups of field or event rules' });
export const limitQuery = (def = 20, max = 100) =>
  z.coerce
    .number()
    .int()
    .min(1)
    .max(max)
    .optional()
    .openapi({ description: `Page size (default ${def})` });
export const stringQuery = (description?: string) =>
  z
    .string()
    .optional()
    .openapi(description ? { description } : {});
export const boolQuery = z.enum(['true', 'false']).optional();

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  302: 'Redirect',
  303: 'See other',
  400: 'Bad request',
  401: 'Missing or invalid credentials',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Request body too large',
  415: 'Unsupported media type',
  422: 'Validation failed',
  429: 'Rate limit exceeded',
  501: 'Not configured on this deployment',
  503: 'A dependency is unavailable; retry after Retry-After seconds',
};

// API-key routes also take the console's session cookie with X-Project-Id (http/auth.ts).
const CONSOLE = { session: [], consoleSession: [] };
const SECURITY: Record<Auth, Record<string, string[]>[]> = {
  secret: [{ secretKey: [] }, CONSOLE],
  public: [{ publicKey: [] }, { secretKey: [] }, CONSOLE],
  session: [{ session: [] }],
  webhook: [{ webhookSecret: [] }],
  none: [],
};

function errorStatuses(op: DeclaredOperation): number[] {
  const out = new Set(op.errors ?? []);
  if (op.auth === 'secret' || op.auth === 'public') [401, 403, 429].forEach((s) => out.add(s));
  if (op.auth === 'session' || op.auth === 'webhook') out.add(401);
  if (op.body && (op.bodyType ?? 'application/json') === 'application/json') [400, 413, 422].forEach((s) => out.add(s));
  // A malformed query parameter: 422 for a number that is not one, 400 for an unknown enum value or cursor.
  if (op.query) [400, 422].forEach((s) => out.add(s));
  if (op.auth !== 'none') out.add(503);
  return [...out].sort();
}

function response(status: number, doc: ResponseDoc): ResponseConfig {
  const description = STATUS_TEXT[status] ?? 'Answer';
  if (doc === null) return { description };
  if (doc instanceof z.ZodType) return { description, content: { 'application/json': { schema: doc } } };
  return {
    description: doc.description,
    ...(doc.content
      ? { content: Object.fromEntries(Object.entries(doc.content).map(([type, schema]) => [type, { schema }])) }
      : {}),
    ...(doc.headers
      ? {
          headers: Object.fromEntries(
            Object.entries(doc.headers).map(([name, d]) => [name, { description: d, schema: { type: 'string' } }]),
          ),
        }
      : {}),
  };
}

/** `/contacts/:id` -> `/contacts/{id}`, and the names of its parameters. */
export function openApiPath(path: string): { path: string; params: string[] } {
  const params: string[] = [];
  const out = path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    params.push(name);
    return `{${name}}`;
  });
  return { path: out, params };
}

function register(registry: OpenAPIRegistry, op: DeclaredOperation): void {
  const { path, params } = openApiPath(op.path);
  const declared = op.params?.shape ?? {};
  const paramSchema = params.length
    ? z.object(Object.fromEntries(params.map((p) => [p, (declared[p] as z.ZodTypeAny) ?? z.string()])))
    : undefined;
  const responses: Record<string, ResponseConfig> = {};
  for (const [status, doc] of Object.entries(op.responses)) responses[status] = response(Number(status), doc);
  for (const status of errorStatuses(op)) {
    responses[String(status)] ??= {
      description: STATUS_TEXT[status] ?? 'Error',
      content: { 'application/json': { schema: ErrorSchema } },
    };
  }
  const headers =
    op.idempotent || (op.auth !== 'none' && op.auth !== 'session' && op.method !== 'get')
      ? z.object({
          'Idempotency-Key': z
            .string()
            .optional()
            .openapi({ description: 'Repeats with the same key within 24 h replay the first answer' }),
        })
      : undefined;
  registry.registerPath({
    method: op.method,
    path,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: [op.tag],
    operationId: `${op.method}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c?: string) => (c ? c.toUpperCase() : ''))}`,
    security: SECURITY[op.auth],
    request: {
      ...(paramSchema ? { params: paramSchema } : {}),
      ...(op.query ? { query: op.query } : {}),
      ...(headers ? { headers } : {}),
      ...(op.body
        ? {
            body: {
              required: op.bodyRequired ?? true,
              content: { [op.bodyType ?? 'application/json']: { schema: op.body } },
            },
          }
        : {}),
    },
    responses,
  });
}

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[]; [OPERATIONS]?: DeclaredOperation[]; [EXCLUDED]?: string };
}

/** Every operation declared on the routers mounted in the app, in mounting order. */
export function declaredOperations(app: Express): DeclaredOperation[] {
  const out: DeclaredOperation[] = [];
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      const ops = layer.handle?.[OPERATIONS];
      if (ops) out.push(...ops);
      else if (layer.handle?.stack) walk(layer.handle.stack);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return out;
}

export interface ServedRoute {
  method: string;
  path: string;
  /** Why it is not in the document (routers mounted through notInDocument). */
  excluded?: string;
}

/** Every method+path the Express app answers (routes of nested routers included). */
export function servedRoutes(app: Express): ServedRoute[] {
  const out: ServedRoute[] = [];
  const walk = (stack: Layer[], excluded?: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        for (const [method, on] of Object.entries(layer.route.methods)) {
          if (!on || method === '_all') continue;
          for (const path of paths) out.push({ method, path, ...(excluded ? { excluded } : {}) });
        }
      } else if (layer.handle?.stack) walk(layer.handle.stack, layer.handle[EXCLUDED] ?? excluded);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return out;
}

export interface DocumentInfo {
  version: string;
  serverUrl: string;
}

/** The OpenAPI 3.1 document of the app's declared operations. */
export function openApiDocument(app: Express, info: DocumentInfo) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'secretKey', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'sk_*',
    description: "The project's secret key: every API-key endpoint.",
  });
  registry.registerComponent('securitySchemes', 'publicKey', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'pk_*',
    description: "The project's public key: only /v1/track (which also takes the secret key).",
  });
  registry.registerComponent('securitySchemes', 'session', {
    type: 'apiKey',
    in: 'cookie',
    name: SESSION_COOKIE,
    description: 'The signed dashboard session cookie set by /auth/login and /auth/signup.',
  });
  registry.registerComponent('securitySchemes', 'consoleSession', {
    type: 'apiKey',
    in: 'header',
    name: PROJECT_HEADER,
    description:
      "The web console: the session cookie together with this header naming one of the user's projects " +
      'opens the API-key endpoints of that project.',
  });
  registry.registerComponent('securitySchemes', 'webhookSecret', {
    type: 'apiKey',
    in: 'header',
    name: 'X-Webhook-Secret',
    description: 'The shared WEBHOOK_SECRET of the mail infrastructure (provider notifications).',
  });
  const seen = new Set<string>();
  for (const op of declaredOperations(app)) {
    const key = `${op.method} ${op.path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    register(registry, op);
  }
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Email platform REST API',
      version: info.version,
      description:
        'Contacts, events, sending, templates, campaigns, segments, workflows and the dashboard API. ' +
        'Errors share one envelope (`Error`). Generated from the route declarations of the gateway.',
    },
    servers: [{ url: info.serverUrl }],
  });
}
