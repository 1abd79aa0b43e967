import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes, randomUUID } from 'node:crypto';

/**
 * The request a piece of work belongs to, carried across every hop: HTTP (gateway), RPC
 * (`x-request-id`, `traceparent` metadata) and the bus (outbox columns, then message headers).
 * Log lines read it through the logger's mixin, so no code passes it by hand.
 */
export interface RequestContext {
  requestId: string;
  /** W3C trace id: 32 lowercase hex digits, the same on every hop of one request. */
  traceId: string;
  /** The span id the caller sent (W3C parent-id); each outgoing hop gets a new one. */
  parentId: string;
  /** W3C trace flags, two hex digits (`01` = sampled). */
  flags: string;
  /**
   * Traces on (lib/tracing.ts): the OpenTelemetry context of this hop's span, whose ids are then
   * `traceId`/`parentId` above; the next hop's parent is that span instead of a minted id.
   */
  otel?: unknown;
}

/** What crosses a process boundary: the two headers, either possibly absent. */
export interface PropagatedContext {
  requestId?: string | null;
  traceparent?: string | null;
}

const storage = new AsyncLocalStorage<RequestContext | undefined>();

/** What lib/tracing.ts plugs in when traces are on; unset (traces off), nothing here calls into OpenTelemetry. */
export interface TraceBridge {
  /**
   * Runs `fn` inside the OpenTelemetry context of `ctx`: its hop's span, else (a context made from a caller's
   * `traceparent` without a span of its own) that caller's span as a remote parent; none outside a request.
   */
  scope<T>(ctx: RequestContext | undefined, fn: () => T): T;
  /** The active span's ids, for log lines. */
  activeIds(): { traceId: string; spanId: string } | undefined;
}

let bridge: TraceBridge | undefined;

export function setTraceBridge(b: TraceBridge | undefined): void {
  bridge = b;
}

/** A request id we accept from outside (a proxy, a caller): printable, no spaces, bounded. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

export function isValidRequestId(id: string | null | undefined): id is string {
  return !!id && REQUEST_ID.test(id);
}

export function mintRequestId(): string {
  return `req_${randomUUID().replace(/-/g, '')}`;
}

export interface Traceparent {
  traceId: string;
  parentId: string;
  flags: string;
}

/**
 * W3C Trace Context level 1: `00-<trace id>-<parent id>-<flags>`. Version `ff` and all-zero ids are
 * invalid; a later version is read by its first four fields (the spec's forward-compatibility rule).
 */
export function parseTraceparent(header: string | null | undefined): Traceparent | undefined {
  const m = header ? TRACEPARENT.exec(header.trim()) : null;
  if (!m) return undefined;
  const [, version, traceId, parentId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || parentId === ZERO_SPAN) return undefined;
  return { traceId, parentId, flags };
}

export function formatTraceparent(t: Traceparent): string {
  return `00-${t.traceId}-${t.parentId}-${t.flags}`;
}

// Ids are minted for every request and every hop: one call to the system's random source per 4 KiB of
// them, not one (a synchronous getrandom) per id.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

function randomHex(bytes: number, zero: string): string {
  for (;;) {
    if (used + bytes > pool.length) {
      pool = randomBytes(POOL_BYTES);
      used = 0;
    }
    const hex = pool.toString('hex', used, used + bytes);
    used += bytes;
    if (hex !== zero) return hex;
  }
}

export const mintSpanId = () => randomHex(8, ZERO_SPAN);

/** A new trace: random 16-byte trace id and 8-byte span id, sampled. */
export function mintTraceparent(): Traceparent {
  return { traceId: randomHex(16, ZERO_TRACE), parentId: mintSpanId(), flags: '01' };
}

/**
 * The context of an incoming hop: a valid request id and traceparent are honoured, a missing or
 * malformed one is minted, so every hop has both.
 */
export function contextFrom(incoming: PropagatedContext): RequestContext {
  const requestId = isValidRequestId(incoming.requestId) ? incoming.requestId : mintRequestId();
  return { requestId, ...(parseTraceparent(incoming.traceparent) ?? mintTraceparent()) };
}

/** A bus message's context: none when it carries neither header (published outside a request). */
export function messageContext(incoming: PropagatedContext): RequestContext | undefined {
  return incoming.requestId || incoming.traceparent ? contextFrom(incoming) : undefined;
}

export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}

/**
 * Runs `fn` (and everything it starts) inside `ctx`; undefined runs it outside any request. `run(undefined)`,
 * not `exit()`: exit turns the async hooks off and on again around `fn` (Node 20), a cost per bus message.
 */
export function runInContext<T>(ctx: RequestContext | undefined, fn: () => T): T {
  if (bridge) return bridge.scope(ctx, () => storage.run(ctx, fn));
  return storage.run(ctx, fn);
}

/** The traceparent for the next hop out of `ctx`: same trace, a new span id. */
export function childTraceparent(ctx: RequestContext): string {
  return `00-${ctx.traceId}-${mintSpanId()}-${ctx.flags}`;
}

/**
 * What the next hop (an RPC call, an outbox row) carries; by default from the current context (none outside one).
 * With traces on, the parent is a recorded span (this hop's, else the caller's), not a minted id.
 */
export function outgoingContext(
  ctx: RequestContext | undefined = storage.getStore(),
): { requestId: string; traceparent: string } | undefined {
  return ctx && { requestId: ctx.requestId, traceparent: bridge ? formatTraceparent(ctx) : childTraceparent(ctx) };
}

/**
 * Log fields of the current context (the logger's mixin): none outside a request. With traces on,
 * also the active span's id, and the ids of an active span outside any request.
 */
export function logFields(): { requestId?: string; traceId?: string; spanId?: string } {
  const ctx = storage.getStore();
  // A fresh object each time: pino merges the log call's fields into it.
  if (!bridge) return ctx ? { requestId: ctx.requestId, traceId: ctx.traceId } : {};
  const span = bridge.activeIds();
  if (!ctx) return span ? { traceId: span.traceId, spanId: span.spanId } : {};
  return {
    requestId: ctx.requestId,
    traceId: ctx.traceId,
    ...(span?.traceId === ctx.traceId && { spanId: span.spanId }),
  };
}
