import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '@svc/lib/logger';

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
    log: Logger;
  }
}

const INCOMING = /^[A-Za-z0-9._:-]{8,128}$/;

/** Honours a sane incoming X-Request-Id (from a proxy), else mints one; echoed on every answer. */
export function requestId(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    req.requestId = incoming && INCOMING.test(incoming) ? incoming : `req_${randomUUID().replace(/-/g, '')}`;
    req.log = logger.child({ requestId: req.requestId });
    res.setHeader('X-Request-Id', req.requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      req.log.debug({ method: req.method, path: req.path, status: res.statusCode, ms }, 'request');
    });
    next();
  };
}
