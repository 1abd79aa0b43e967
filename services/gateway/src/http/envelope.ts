import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { AppError, internal, RETRY_AFTER_SECONDS } from '@svc/lib/errors';
import type { Logger } from '@svc/lib/logger';

/** Public endpoints answer `{success: true, data}`; dashboard endpoints answer the resource itself. */
export const wrapped = (data: unknown) => ({ success: true, data });

/**
 * `res.json(value)` of a POST's answer with the same headers (Content-Type with its charset, Content-Length),
 * without Express's content-type parsing and formatting on each call: for the hottest route, /v1/track.
 */
export function sendJson(res: Response, value: unknown): void {
  // Idempotency-Key keeps the answer by wrapping this answer's `res.send`: then it goes through it.
  if (Object.hasOwn(res, 'send')) {
    res.json(value);
    return;
  }
  const body = JSON.stringify(value);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(body)));
  res.end(body, 'utf8');
}

interface ExpressError {
  name?: string;
  type?: string;
  status?: number;
  expose?: boolean;
  code?: string;
  message?: string;
}

function fromExpressError(err: ExpressError): AppError | null {
  if (err.type === 'entity.parse.failed') {
    return new AppError({ code: 'BAD_REQUEST', status: 400, message: 'Malformed JSON in request body' });
  }
  if (err.type === 'entity.too.large') {
    return new AppError({ code: 'PAYLOAD_TOO_LARGE', status: 413, message: 'Request body is too large' });
  }
  if (err.type === 'encoding.unsupported' || err.type === 'charset.unsupported') {
    return new AppError({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      status: 415,
      message: err.message ?? 'Unsupported body encoding',
    });
  }
  // A body that does not inflate as its Content-Encoding says (zlib's Z_DATA_ERROR, Z_BUF_ERROR).
  if (err.code?.startsWith('Z_')) {
    return new AppError({
      code: 'BAD_REQUEST',
      status: 400,
      message: 'Request body does not match its Content-Encoding',
    });
  }
  // Other client errors of body-parser (an aborted body) and the router (a URIError: a path that
  // does not percent-decode).
  if (typeof err.status === 'number' && err.status >= 400 && err.status < 500) {
    const message = err.expose || err.name === 'URIError' ? (err.message ?? 'Bad request') : 'Bad request';
    return new AppError({ code: 'BAD_REQUEST', status: err.status, message });
  }
  return null;
}

export function envelopeOf(err: AppError, requestId: string) {
  if (err.flat) return { error: err.message };
  return {
    success: false,
    error: {
      code: err.code,
      message: err.message,
      statusCode: err.status,
      requestId,
      ...(err.errors?.length ? { errors: err.errors } : {}),
      ...(err.details ? { details: err.details } : {}),
      ...(err.suggestion ? { suggestion: err.suggestion } : {}),
    },
    timestamp: new Date().toISOString(),
  };
}

/** The one place that turns errors into HTTP answers. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const app = err instanceof AppError ? err : (fromExpressError(err) ?? internal());
    // A 503 is an outage, logged once per state change where it is detected, not once per request.
    if (app.status === 503) logger.debug({ requestId: req.requestId, path: req.path }, 'dependency unavailable');
    // A 501 is a deliberate answer (e.g. no payment provider on this deployment), not a failure.
    else if (app.status === 501) logger.debug({ requestId: req.requestId, path: req.path }, 'not configured here');
    else if (app.status >= 500) logger.error({ err, requestId: req.requestId, path: req.path }, 'request failed');
    const retryAfter = typeof app.details?.retryAfter === 'number' ? app.details.retryAfter : RETRY_AFTER_SECONDS;
    if (app.status === 503 || (app.status === 429 && typeof app.details?.retryAfter === 'number')) {
      res.setHeader('Retry-After', String(retryAfter));
    }
    res.status(app.status).json(envelopeOf(app, req.requestId));
  };
}

export const routeNotFound: RequestHandler = (req, _res, next) =>
  next(
    new AppError({
      code: 'RESOURCE_NOT_FOUND',
      status: 404,
      message: `No route for ${req.method} ${req.path}`,
      details: { resource: 'Route', id: req.path },
    }),
  );
