import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError } from '@svc/lib/errors';
import { currentContext, runInContext } from '@svc/lib/request-context';
import { tracingOn } from '@svc/lib/tracing';
import { checkJsonBody } from './input-guard.js';

/**
 * The hottest routes, `POST /v1/track` and `POST /v1/send`, without Express's router: the same handlers the route's
 * Express chain runs (request id, key guards, the route's handler) and the same error handler, called in turn by one
 * `next`. Express walks every app-level middleware and router before the route (a tenth of the gateway's CPU per
 * track) and parses the body through body-parser. A lane takes only the common request: anything else (a query
 * string, a console session, a body that is not plain JSON with a Content-Length within the limit) goes through
 * Express as before, and with traces on everything does, so the express instrumentation's spans stay in each
 * request's trace.
 */
export interface Lane {
  /** Whether the lane answers this request (decided on the request line and headers alone). */
  takes(req: IncomingMessage): boolean;
  run(req: IncomingMessage, res: ServerResponse): void;
}

const JSON_TYPE = /^application\/json\s*(;\s*charset="?utf-8"?\s*)?$/i;
const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

/** BODY_LIMIT (`100kb`, `1mb`) in bytes, as body-parser reads it. */
export function limitBytes(limit: string): number {
  const m = /^(\d+)(b|kb|mb)$/i.exec(limit);
  if (!m) throw new Error(`not a body limit: ${limit}`);
  return Number(m[1]) * UNITS[m[2].toLowerCase()];
}

const malformed = () => new AppError({ code: 'BAD_REQUEST', status: 400, message: 'Malformed JSON in request body' });

/** body-parser's strict mode: the first character after JSON's white space is `{` or `[`. */
function opensObjectOrArray(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) return true;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return false;
}

/** The JSON body as express.json reads it (strict: an object or an array; a lone BOM is `{}`), then the checks. */
function parseBody(raw: Buffer): unknown {
  let text = raw.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  if (!opensObjectOrArray(text)) throw malformed();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw malformed();
  }
  checkJsonBody(body);
  return body;
}

/** Reads the body the lane's gate let in: a known length within the limit, no Content-Encoding. */
const readBody: RequestHandler = (req, _res, next) => {
  const expected = Number(req.headers['content-length']);
  // The stream's events run outside the request's context: the handlers after this one run back inside it.
  const ctx = currentContext();
  const chunks: Buffer[] = [];
  let received = 0;
  req.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    received += chunk.length;
  });
  req.on('error', () =>
    runInContext(ctx, () => next(new AppError({ code: 'BAD_REQUEST', status: 400, message: 'request aborted' }))),
  );
  req.on('end', () => runInContext(ctx, () => afterBody(req, expected, received, chunks, next)));
};

function afterBody(req: Request, expected: number, received: number, chunks: Buffer[], next: NextFunction): void {
  if (received !== expected) {
    next(new AppError({ code: 'BAD_REQUEST', status: 400, message: 'request size did not match content length' }));
    return;
  }
  try {
    req.body = parseBody(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
  } catch (err) {
    next(err);
    return;
  }
  next();
}

export interface LaneOptions {
  /** The route's path: the lane takes `POST` to exactly this path. */
  path: string;
  bodyLimit: string;
  /** The handlers before the body is read (the request id, a key guard), then after it (the rest, the handler). */
  before: RequestHandler[];
  after: RequestHandler[];
  /** The app's error handler: errors answer the same envelope as on the Express path. */
  onError: ErrorRequestHandler;
}

export function routeLane(app: Express, opts: LaneOptions): Lane {
  const limit = limitBytes(opts.bodyLimit);
  /** What the metrics and the request line read of the matched route (`req.route.path`). */
  const route = { path: opts.path };
  const steps = [...opts.before, readBody, ...opts.after];
  const lastResort = (err: unknown, res: ServerResponse) => {
    // The error handler itself failed (the answer had started): end the exchange as Express's final handler would.
    if (!res.headersSent) {
      res.statusCode = 500;
      res.end();
    } else res.destroy(err instanceof Error ? err : undefined);
  };
  return {
    takes(req) {
      if (req.method !== 'POST' || req.url !== opts.path || !tracingOff()) return false;
      const h = req.headers;
      // Node's parser refused a Content-Length that is not digits already.
      const length = Number(h['content-length']);
      const type = h['content-type'];
      return (
        h['x-project-id'] === undefined &&
        h['transfer-encoding'] === undefined &&
        h['content-encoding'] === undefined &&
        length > 0 &&
        length <= limit &&
        type !== undefined &&
        (type === 'application/json' || JSON_TYPE.test(type))
      );
    },
    run(rawReq, rawRes) {
      // What Express's app.handle and router do before the first handler.
      Object.setPrototypeOf(rawReq, app.request);
      Object.setPrototypeOf(rawRes, app.response);
      const req = rawReq as Request;
      const res = rawRes as Response;
      req.res = res;
      res.req = req;
      res.locals = Object.create(null);
      req.originalUrl = req.url;
      req.baseUrl = '';
      req.route = route;
      let i = 0;
      const fail = (err: unknown) => {
        try {
          opts.onError(err, req, res, (e?: unknown) => lastResort(e ?? err, res));
        } catch (e) {
          lastResort(e, res);
        }
      };
      const next = (err?: unknown) => {
        if (err) return fail(err);
        const step = steps[i++];
        if (!step) return fail(new Error(`the ${opts.path} lane ran out of handlers`));
        try {
          const out = step(req, res, next) as unknown;
          if (out instanceof Promise) out.catch((e: unknown) => fail(e ?? new Error('Rejected promise')));
        } catch (e) {
          fail(e);
        }
      };
      next();
    },
  };
}

type Handle = (req: IncomingMessage, res: ServerResponse, callback?: (err?: unknown) => void) => void;

/**
 * Puts the lanes in front of the app's own dispatch (`app.handle`, which both `http.createServer(app)` and a
 * test's supertest call), so every server of this app has them. A mounted app (a callback given) is left alone.
 */
export function installLanes(app: Express, lanes: LaneOptions[]): void {
  const routes = lanes.map((opts) => routeLane(app, opts));
  const dispatch = app as unknown as { handle: Handle };
  const handle = dispatch.handle.bind(app);
  dispatch.handle = (req, res, callback) => {
    const lane = callback === undefined ? routes.find((l) => l.takes(req)) : undefined;
    if (lane) lane.run(req, res);
    else handle(req, res, callback);
  };
}

function tracingOff(): boolean {
  return !tracingOn();
}
