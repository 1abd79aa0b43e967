import {
  context,
  createContextKey,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { createRequire } from 'node:module';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { BusHandler } from './bus.js';
import type { Logger } from './logger.js';
import {
  contextFrom,
  currentContext,
  parseTraceparent,
  runInContext,
  setTraceBridge,
  type RequestContext,
  type Traceparent,
} from './request-context.js';
import { TRACEPARENT_HEADER, inContext } from './rpc-context.js';

/**
 * OpenTelemetry traces (README "Traces (OpenTelemetry)"). Off unless an OTLP endpoint is set: then
 * nothing here is called on a request's path and the SDK is never loaded (only the small API package).
 * On: bin/platform.ts starts the SDK (lib/tracing-sdk.ts) before any service module loads, so the
 * http, express, pg and ioredis instrumentations patch those modules; the hops of our own make spans
 * here: gRPC calls (client and server interceptors), outbox publishes (producer) and bus deliveries
 * (consumer). Context crosses processes as the W3C `traceparent` the request context already carries:
 * RPC metadata, the outbox row's column, the message's header.
 *
 * Every span carries the service it belongs to as the attribute `platform.service`: a process that runs
 * several services (embedded mode) has one resource `service.name`, so that attribute tells them apart.
 */
export const SERVICE_ATTRIBUTE = 'platform.service';
const SERVICE_KEY = createContextKey(SERVICE_ATTRIBUTE);

const INSTRUMENTED = /[\\/]node_modules[\\/](pg|pg-pool|ioredis|express)[\\/]/;

let tracer: Tracer | undefined;
/** The http instrumentation's server span of a request (it is not always the active span inside express). */
let httpSpanOf: (ctx: Context) => Span | undefined = () => undefined;

/** Traces are on when an OTLP endpoint is set, unless the standard switches turn them off. */
export function tracesWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((e) => e.trim());
  if (exporters.includes('none')) return false;
  return !!(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

export function tracingOn(): boolean {
  return tracer !== undefined;
}

/**
 * Starts the SDK when traces are wanted; call it before the services' modules are imported. The resource's
 * `service.name` is OTEL_SERVICE_NAME, else the one service this process runs, else `platform`. Answers the
 * flush-and-stop function (nothing when traces are off).
 */
export async function startTracing(
  services: string[],
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
): Promise<(() => Promise<void>) | undefined> {
  if (!tracesWanted(env)) return undefined;
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || (services.length === 1 ? services[0] : 'platform');
  // HTTP/1 is served by the edge service only; in a process without it, its own single service.
  const httpService = services.includes('gateway') ? 'gateway' : services.length === 1 ? services[0] : undefined;
  // An instrumented module loaded already (a static import in bin/platform.ts's graph) stays unpatched: say so.
  const early = Object.keys(createRequire(import.meta.url).cache).filter((f) => INSTRUMENTED.test(f));
  if (early.length) logger.warn({ modules: early.slice(0, 5) }, 'loaded before the trace SDK started: no spans');
  const { startSdk } = await import('./tracing-sdk.js');
  const sdk = await startSdk({ serviceName, tag: (span) => tag(span, httpService) });
  tracer = trace.getTracer('svc-platform');
  httpSpanOf = sdk.httpSpanOf;
  setTraceBridge({
    scope: (ctx, fn) =>
      context.with(ctx ? ((ctx.otel as Context | undefined) ?? keepService(remoteParent(ctx))) : keepService(), fn),
    activeIds: () => {
      const span = trace.getActiveSpan();
      return span && { traceId: span.spanContext().traceId, spanId: span.spanContext().spanId };
    },
  });
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  logger.info({ serviceName, endpoint: endpointForLog(endpoint) }, 'traces on (OpenTelemetry)');
  return sdk.shutdown;
}

/** `scheme://host:port/path`: no credentials in the log. */
function endpointForLog(url: string | undefined): string {
  try {
    const u = new URL(url ?? '');
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return 'set (not a URL)';
  }
}

/**
 * `target` (no span: a new trace) with the current service kept: work a service starts outside any request
 * (a batch call, a relay pass) is still that service's.
 */
function keepService(target: Context = ROOT_CONTEXT): Context {
  const service = context.active().getValue(SERVICE_KEY);
  return service ? target.setValue(SERVICE_KEY, service) : target;
}

/** The service of an instrumentation's span: the hop it runs in, else the process's HTTP service. */
function tag(span: Span, fallback: string | undefined): void {
  const service = context.active().getValue(SERVICE_KEY) ?? fallback;
  if (typeof service === 'string') span.setAttribute(SERVICE_ATTRIBUTE, service);
}

/** The parent a `traceparent` (or a request context) names, from another process; a new trace when none. */
function remoteParent(from: string | null | undefined | Traceparent): Context {
  const tp = typeof from === 'object' && from ? from : parseTraceparent(from);
  if (!tp) return ROOT_CONTEXT;
  const traceFlags = Number.parseInt(tp.flags, 16);
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: tp.traceId, spanId: tp.parentId, traceFlags, isRemote: true });
}

function traceparentOf(span: Span): string {
  const sc = span.spanContext();
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`;
}

/** A span of `service` under `parent`; the context answered has both, for what runs inside the span. */
function startSpan(
  name: string,
  kind: SpanKind,
  parent: Context,
  attributes: Attributes,
  service = parent.getValue(SERVICE_KEY) as string | undefined,
  links: Link[] = [],
): { span: Span; ctx: Context } {
  const withService = service ? parent.setValue(SERVICE_KEY, service) : parent;
  const span = tracer!.startSpan(
    name,
    { kind, attributes: service ? { ...attributes, [SERVICE_ATTRIBUTE]: service } : attributes, links },
    withService,
  );
  return { span, ctx: trace.setSpan(withService, span) };
}

/** The request context of a hop whose span is `span`: log lines and the next hops refer to that span. */
function hopContext(base: RequestContext, span: Span, ctx: Context): RequestContext {
  const sc = span.spanContext();
  return {
    ...base,
    traceId: sc.traceId,
    parentId: sc.spanId,
    flags: sc.traceFlags.toString(16).padStart(2, '0'),
    otel: ctx,
  };
}

function fail(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : undefined });
}

/** Ends `span` when `work` settles, marked failed if it rejects; answers what `work` answers. */
function endWith<T>(span: Span, work: Promise<T>): Promise<T> {
  return work.then(
    (value) => {
      span.end();
      return value;
    },
    (err) => {
      fail(span, err);
      span.end();
      throw err;
    },
  );
}

/** Ends `span` once `messages` is read to its end (or abandoned): a streamed answer's span covers the stream. */
async function* endingWith<T>(span: Span, messages: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (err) {
    fail(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Gateway: the request context adopts the http instrumentation's server span (the same trace as an
 * incoming `traceparent`), so log lines, RPC calls and spans of the request are in that trace.
 */
export function adoptHttpSpan(ctx: RequestContext, service: string): RequestContext {
  if (!tracer) return ctx;
  const active = context.active();
  const span = httpSpanOf(active) ?? trace.getActiveSpan();
  // A probe, left out of traces: what it calls is not sampled either (the flag travels on).
  if (!span) return { ...ctx, flags: '00' };
  span.setAttribute(SERVICE_ATTRIBUTE, service);
  return hopContext(ctx, span, trace.setSpan(active, span).setValue(SERVICE_KEY, service));
}

/** Health checks (probes, readiness fan-out) every few seconds: not worth a trace. */
const HEALTH = 'grpc.health.v1.Health';

const rpcName = (req: Parameters<ReturnType<Interceptor>>[0]) => `${req.service.typeName}/${req.method.name}`;

function rpcAttributes(req: Parameters<ReturnType<Interceptor>>[0]): Attributes {
  return { 'rpc.system': 'grpc', 'rpc.service': req.service.typeName, 'rpc.method': req.method.name };
}

/** gRPC codes a server span counts as its own failure (OpenTelemetry's gRPC conventions); the rest are the caller's. */
const SERVER_FAULTS = new Set<number>([
  Code.Unknown,
  Code.DeadlineExceeded,
  Code.Unimplemented,
  Code.Internal,
  Code.Unavailable,
  Code.DataLoss,
]);

function endRpc(span: Span, err: unknown, server: boolean): void {
  const code: number = err === undefined ? 0 : err instanceof ConnectError ? err.code : Code.Unknown;
  span.setAttribute('rpc.grpc.status_code', code);
  if (err !== undefined && (!server || SERVER_FAULTS.has(code))) fail(span, err);
  span.end();
}

/** Client side of a gRPC call: a CLIENT span, whose id the callee receives as its parent (`traceparent`). */
export function tracingClientInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (req.service.typeName === HEALTH) return next(req);
    const url = new URL(req.url);
    const { span, ctx } = startSpan(rpcName(req), SpanKind.CLIENT, context.active(), {
      ...rpcAttributes(req),
      'server.address': url.hostname,
      'server.port': Number(url.port) || 80,
    });
    req.header.set(TRACEPARENT_HEADER, traceparentOf(span));
    try {
      const res = await context.with(ctx, () => next(req));
      if (res.stream) return { ...res, message: endingWith(span, res.message) };
      endRpc(span, undefined, false);
      return res;
    } catch (err) {
      endRpc(span, err, false);
      throw err;
    }
  };
}

/**
 * Server side of a gRPC call (inside the request-context interceptor): a SERVER span under the caller's,
 * and the handler runs in it, so its database calls, log lines and outbox rows belong to it.
 */
export function tracingServerInterceptor(service: string): Interceptor {
  return (next) => async (req) => {
    if (req.service.typeName === HEALTH) return next(req);
    const { span, ctx } = startSpan(
      rpcName(req),
      SpanKind.SERVER,
      remoteParent(req.header.get(TRACEPARENT_HEADER)),
      rpcAttributes(req),
      service,
    );
    const hop = hopContext(currentContext() ?? contextFrom({}), span, ctx);
    try {
      const res = await runInContext(hop, () => next(req));
      if (res.stream) return { ...res, message: endingWith(span, inContext(hop, res.message)) };
      endRpc(span, undefined, true);
      return res;
    } catch (err) {
      endRpc(span, err, true);
      throw err;
    }
  };
}

/**
 * One item of a batch call, done for the request `ctx` came from (its `traceparent`): runs in a span of
 * that request's trace, linked to the batch call's span, so the request's trace shows its own work and
 * the messages it wrote. Traces off: `runInContext(ctx, fn)`.
 */
export function runItemInContext<T>(ctx: RequestContext, name: string, fn: () => Promise<T>): Promise<T> {
  if (!tracer) return runInContext(ctx, fn);
  const batch = trace.getActiveSpan();
  const { span, ctx: inSpan } = startSpan(
    name,
    SpanKind.INTERNAL,
    remoteParent(ctx),
    {},
    context.active().getValue(SERVICE_KEY) as string | undefined,
    batch ? [{ context: batch.spanContext() }] : [],
  );
  return endWith(span, runInContext(hopContext(ctx, span, inSpan), fn));
}

/**
 * The outbox relay's publish of one row: a PRODUCER span under the request that wrote the row (its
 * `traceparent` column) or a new trace, and the message carries the producer span as its parent.
 */
export function tracedPublish(
  service: string,
  system: string | undefined,
  message: { subject: string; id: string; traceparent: string | null },
  publish: (traceparent: string | null) => Promise<void>,
): Promise<void> {
  if (!tracer) return publish(message.traceparent);
  const { span } = startSpan(
    `publish ${message.subject}`,
    SpanKind.PRODUCER,
    remoteParent(message.traceparent),
    {
      'messaging.system': system ?? 'unknown',
      'messaging.operation.type': 'send',
      'messaging.destination.name': message.subject,
      'messaging.message.id': message.id,
    },
    service,
  );
  return endWith(span, publish(traceparentOf(span)));
}

/**
 * A durable consumer's handler in a CONSUMER span under the message's producer span. The span's service
 * is the durable's first word: durables are named `<service>-<purpose>` (`segments-membership`).
 */
export function tracedHandler(durable: string, system: string | undefined, handler: BusHandler): BusHandler {
  if (!tracer) return handler;
  const service = durable.split('-')[0];
  return (m) => {
    const { span, ctx } = startSpan(
      `process ${m.subject}`,
      SpanKind.CONSUMER,
      remoteParent(m.traceparent),
      {
        'messaging.system': system ?? 'unknown',
        'messaging.operation.type': 'process',
        'messaging.destination.name': m.subject,
        'messaging.consumer.group.name': durable,
        'messaging.message.id': m.id,
      },
      service,
    );
    const hop = hopContext(currentContext() ?? contextFrom({ requestId: m.requestId }), span, ctx);
    return endWith(
      span,
      runInContext(hop, () => handler(m)),
    );
  };
}
