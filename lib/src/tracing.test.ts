import type { BusHandler } from './bus.js';
import { contextFrom, outgoingContext, parseTraceparent } from './request-context.js';
import { runItemInContext, tracedHandler, tracedPublish, tracesWanted, tracingOn } from './tracing.js';

describe('tracesWanted', () => {
  test.each([
    ['no endpoint', {}, false],
    ['an endpoint', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    ['a traces endpoint only', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    ['a blank endpoint', { OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }, false],
    ['the SDK disabled', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' }, false],
    ['the traces exporter none', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
  ])('%s', (_what, env, wanted) => {
    expect(tracesWanted(env as NodeJS.ProcessEnv)).toBe(wanted);
  });
});

describe('traces off (the SDK never started)', () => {
  test('nothing is wrapped and the hops pass their context on as before', async () => {
    expect(tracingOn()).toBe(false);
    const handler: BusHandler = async () => undefined;
    expect(tracedHandler('segments-membership', 'nats', handler)).toBe(handler);

    const sent: Array<string | null> = [];
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await tracedPublish('contacts', 'nats', { subject: 'events.tracked', id: 'contacts-1', traceparent: tp }, (t) => {
      sent.push(t);
      return Promise.resolve();
    });
    expect(sent).toEqual([tp]);

    // A batch item runs in its request's context; the next hop gets a new span id of that trace (no span recorded).
    const ctx = contextFrom({ requestId: 'req-12345678', traceparent: tp });
    const out = await runItemInContext(ctx, 'item', async () => outgoingContext());
    expect(out?.requestId).toBe('req-12345678');
    expect(parseTraceparent(out?.traceparent)).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
    expect(parseTraceparent(out?.traceparent)?.parentId).not.toBe('00f067aa0ba902b7');
  });
});
