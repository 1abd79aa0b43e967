import type { Interceptor } from '@connectrpc/connect';
import type { Logger } from './logger.js';
import { contextFrom, outgoingContext, runInContext, type RequestContext } from './request-context.js';

/** gRPC metadata keys (lowercase, as HTTP/2 sends them). */
export const REQUEST_ID_HEADER = 'x-request-id';
export const TRACEPARENT_HEADER = 'traceparent';

/** Client side: every call carries the caller's request id and a traceparent with a new span id. */
export function contextClientInterceptor(): Interceptor {
  return (next) => (req) => {
    const out = outgoingContext();
    if (out) {
      req.header.set(REQUEST_ID_HEADER, out.requestId);
      req.header.set(TRACEPARENT_HEADER, out.traceparent);
    }
    return next(req);
  };
}

/** A streamed answer is produced while the adapter reads it, outside the interceptor's call: each step re-enters. */
export async function* inContext<T>(ctx: RequestContext, messages: AsyncIterable<T>): AsyncIterable<T> {
  const it = messages[Symbol.asyncIterator]();
  try {
    for (;;) {
      const step = await runInContext(ctx, () => it.next());
      if (step.done) return;
      yield step.value;
    }
  } finally {
    await it.return?.();
  }
}

/**
 * Server side: the handler runs inside the caller's context (minted when the caller sent none), so
 * its log lines and outbox rows carry the request id; handlers never read the metadata themselves.
 */
export function contextServerInterceptor(logger: Logger): Interceptor {
  return (next) => (req) => {
    const ctx = contextFrom({
      requestId: req.header.get(REQUEST_ID_HEADER),
      traceparent: req.header.get(TRACEPARENT_HEADER),
    });
    return runInContext(ctx, async () => {
      const started = logger.isLevelEnabled('debug') ? performance.now() : 0;
      try {
        const res = await next(req);
        return res.stream ? { ...res, message: inContext(ctx, res.message) } : res;
      } finally {
        if (started) logger.debug({ procedure: req.method.name, ms: performance.now() - started }, 'rpc handled');
      }
    });
  };
}
