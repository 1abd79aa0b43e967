import type { ErrorInfo } from '@svc/proto/svc/common/v1/error_pb';
import { AppError } from './errors.js';
import { contextFrom, type PropagatedContext } from './request-context.js';
import { errorInfo } from './rpc-errors.js';
import { runItemInContext } from './tracing.js';

/** One item's answer in a batch RPC's response: its value, or its own error. */
export type ItemOutcome<R> = { ok: true; value: R } | { ok: false; error: ErrorInfo };

/**
 * Runs a batch RPC's items (TrackEvents, SendEmails) at once, each inside its own request (with traces on, a
 * span of that request's trace), so their writes still share group commits. An item's AppError is its own
 * answer; when every item failed and one failed for a reason of the service's own (its database is down),
 * the whole call fails, so the error interceptor reports it to the health check as for a unary call.
 */
export async function settleItems<T extends PropagatedContext, R>(
  items: T[],
  name: string,
  run: (item: T) => Promise<R>,
): Promise<ItemOutcome<R>[]> {
  const outcomes = await Promise.allSettled(
    items.map((i) =>
      runItemInContext(contextFrom({ requestId: i.requestId, traceparent: i.traceparent }), name, () => run(i)),
    ),
  );
  const internal = outcomes.find((o) => o.status === 'rejected' && !(o.reason instanceof AppError));
  if (internal && outcomes.every((o) => o.status === 'rejected')) throw (internal as PromiseRejectedResult).reason;
  return outcomes.map((o) =>
    o.status === 'fulfilled' ? { ok: true, value: o.value } : { ok: false, error: errorInfo(o.reason) },
  );
}
