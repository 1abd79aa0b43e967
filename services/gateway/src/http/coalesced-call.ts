import { CallBatcher, type CallBatcherOptions, type Settled } from '@svc/lib/call-batcher';
import { outgoingContext } from '@svc/lib/request-context';
import { appErrorOf } from '@svc/lib/rpc-errors';
import type { ErrorInfo } from '@svc/proto/svc/common/v1/error_pb';

/** A batch item as the protos declare it: the request, and where it came from (request id, traceparent). */
interface Item<R> {
  requestId?: string;
  traceparent?: string;
  request: R;
}

/** A batch answer's result: `ok` names the success case of its oneof. */
interface BatchResult<O> {
  result: { case: string; value: O | ErrorInfo } | { case: undefined; value?: undefined };
}

/**
 * A unary RPC whose concurrent calls travel in one batch call (TrackEvents, SendEmails): the first waits
 * `windowMs` for others, a batch of `maxBatch` goes at once. Each request keeps its own request id and
 * trace and gets its own answer or error. `windowMs` 0, or a request that `alone` says must travel alone,
 * makes the unary call.
 */
export function coalescedCall<R, O>(
  opts: CallBatcherOptions & {
    unary: (request: R) => Promise<O>;
    batch: (items: Item<R>[]) => Promise<BatchResult<O>[]>;
    ok: string;
    alone?: (request: R) => boolean;
  },
): (request: R) => Promise<O> {
  if (opts.windowMs <= 0) return opts.unary;
  const batcher = new CallBatcher<Item<R>, O>(
    async (items) =>
      (await opts.batch(items)).map(({ result: r }): Settled<O> => {
        if (r.case === opts.ok) return { ok: true, value: r.value as O };
        if (r.case === 'error') return { ok: false, error: appErrorOf(r.value as ErrorInfo) };
        return { ok: false, error: new Error('the service answered an item without a result') };
      }),
    opts,
  );
  return (request) => (opts.alone?.(request) ? opts.unary(request) : batcher.submit({ request, ...outgoingContext() }));
}
