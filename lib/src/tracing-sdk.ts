import { register } from 'node:module';
import type { Context, Span } from '@opentelemetry/api';
import { getRPCMetadata } from '@opentelemetry/core';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { createAddHookMessageChannel } from 'import-in-the-middle';

/** Requests that are not worth a trace: probes and scrapes, every few seconds from the cluster. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export interface TracingSdk {
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
  httpSpanOf(ctx: Context): Span | undefined;
}

/**
 * The OpenTelemetry SDK, imported by lib/tracing.ts only when traces are on. Exporter, protocol, headers,
 * sampler and batching come from the standard OTEL_* variables (NodeSDK reads them); metrics and logs
 * stay with Prometheus and the log stream, so the SDK exports traces only. The ESM loader hook is
 * registered for the instrumented modules alone, before the services import them.
 */
export async function startSdk(opts: { serviceName: string; tag(span: Span): void }): Promise<TracingSdk> {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  const tag = (span: Span) => opts.tag(span);
  const sdk = new NodeSDK({
    serviceName: opts.serviceName,
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]),
        requireParentforOutgoingSpans: true,
        requestHook: tag,
      }),
      new ExpressInstrumentation({ requestHook: tag }),
      // Outside a traced request (pollers, the relay's passes, timers) no spans: they would be noise.
      new PgInstrumentation({ requireParentSpan: true, requestHook: tag, connectionHook: tag }),
      new IORedisInstrumentation({ requireParentSpan: true, requestHook: tag }),
    ],
  });
  sdk.start();
  await waitForAllMessagesAcknowledged();
  return { shutdown: () => sdk.shutdown(), httpSpanOf: (ctx) => getRPCMetadata(ctx)?.span };
}
