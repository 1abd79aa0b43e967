import type { RequestHandler } from 'express';

// POST /v1/track is the endpoint meant for client-side use (SPEC.md): a web page on the customer's own site calls
// it with the public key, and `Authorization` plus a JSON body need a CORS preflight. Any origin may, without
// credentials: no Access-Control-Allow-Credentials, so a browser sends no cookie cross-origin and the console's
// session (cookie + X-Project-Id, a header not allowed here) still works from the platform's own pages only.
// No other route answers CORS: the rest of the API is for servers and the console, which is same-origin.

const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key';

/** CORS for `/v1/track`: `Access-Control-Allow-Origin: *` and the preflight's 204 (on the Express path and lane). */
export const trackCors: RequestHandler = (req, res, next) => {
  if (req.get('origin') === undefined) return next();
  res.setHeader('Access-Control-Allow-Origin', '*');
  if (req.method === 'OPTIONS' && req.get('access-control-request-method') !== undefined) {
    res.setHeader('Access-Control-Allow-Methods', 'POST');
    res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
    res.setHeader('Access-Control-Max-Age', '7200');
    res.status(204).end();
    return;
  }
  next();
};
