import type { RequestHandler } from 'express';
import type { Logger } from '@svc/lib/logger';
import { observeHttp } from '@svc/lib/metrics';
import { contextFrom, runInContext } from '@svc/lib/request-context';
import { adoptHttpSpan } from '@svc/lib/tracing';

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
    log: Logger;
  }
}

/**
 * Honours a sane incoming X-Request-Id and a valid W3C `traceparent` (from a proxy), else mints
 * them; X-Request-Id is echoed on every answer. The rest of the request runs inside that context:
 * every log line carries `requestId`/`traceId` (the logger's mixin) and every RPC call sends them on.
 */
export function requestId(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = contextFrom({ requestId: req.get('x-request-id'), traceparent: req.get('traceparent') });
    // Traces on: the request's trace is the http server span's (which honoured that traceparent).
    const ctx = adoptHttpSpan(incoming, 'gateway');
    req.requestId = ctx.requestId;
    req.log = logger;
    res.setHeader('X-Request-Id', ctx.requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // Metrics by route template (`/contacts/:id`), never by raw path: one series per route.
      observeHttp(req.route ? `${req.baseUrl}${req.route.path}` : undefined, req.method, res.statusCode, ms / 1000);
      // One line per request; probes only at debug, so a cluster's health checks do not fill the log. With info off,
      // debug is off too: the path is not even read.
      if (!logger.isLevelEnabled('info')) return;
      const probe = req.path === '/healthz' || req.path === '/readyz';
      const level = probe ? 'debug' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const line = {
        method: req.method,
        route: req.route?.path ?? req.path,
        status: res.statusCode,
        ms: Math.round(ms * 10) / 10,
        ...(req.projectId ? { projectId: req.projectId } : {}),
      };
      runInContext(ctx, () => logger[level](line, `${req.method} ${line.route} ${res.statusCode}`));
    });
    runInContext(ctx, next);
  };
}
