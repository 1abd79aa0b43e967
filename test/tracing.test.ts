import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { connect } from 'nats';
import { call, eventually, platform, sessionCookie, uniqueEmail } from './support/client.js';
import { startOtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';
import { PrivatePostgres } from './support/private-postgres.js';
import { freePort, httpOk, serviceReady, ROOT, startPlatform, stopProcess, waitFor } from './support/processes.js';

/**
 * OpenTelemetry traces across processes: a platform of our own exporting to an OTLP/HTTP receiver on
 * loopback (JSON encoding), in three processes so every hop crosses a real boundary: identity and the
 * gateway together (one resource, `platform`, told apart by the `platform.service` attribute), contacts
 * alone, segments alone (named by OTEL_SERVICE_NAME). One /v1/track must come back as ONE trace: the
 * gateway's HTTP span, its gRPC call, contacts' gRPC span and its database spans, the outbox relay's
 * publish, and segments' consumption of the message over NATS JetStream.
 */
const runId = `otel${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const receiver = await startOtlpReceiver();
// A PostgreSQL of our own: these platforms hold a few dozen connections, not the shared server's.
const postgres = await PrivatePostgres.create();
postgres.start();
const children: Record<string, ChildProcess> = {};
let baseUrl: string;
let publicKey: string;

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const logName = (name: string) => `tracing-${name}`;

/** The env of a traced platform of ours: its own databases and streams, this test's receiver. */
async function tracedEnv(dbName: string): Promise<Record<string, string>> {
  const port = await freePort();
  const env: Record<string, string> = {
    ...platform.env,
    DATABASE_URL: postgres.url.replace(/platform$/, dbName),
    BUS_PREFIX: runId,
    LOG_LEVEL: 'debug',
    PORT: String(port),
    PUBLIC_URL: `http://localhost:${port}`,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=tracing-test',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_TRACES_SAMPLER: 'parentbased_always_on',
  };
  for (const s of ['IDENTITY', 'CONTACTS', 'SEGMENTS']) env[`${s}_PORT`] = String(await freePort());
  return env;
}

/** A new owner's project on the platform at `url`, tracking one segment: its public key. */
async function projectKey(url: string): Promise<string> {
  const signup = await call(
    'POST',
    '/auth/signup',
    { email: uniqueEmail('otel'), password: 'password-123' },
    { baseUrl: url },
  );
  expect(signup.status).toBe(201);
  const cookie = sessionCookie(signup.headers);
  const project = await call('POST', '/users/@me/projects', { name: 'Traces' }, { cookie, baseUrl: url });
  expect(project.status).toBe(201);
  // A tracked segment nobody enters: segments' consumer then reads membership for each event (a project that
  // tracks none is answered from a cache, without a statement), and publishes nothing of its own.
  const condition = {
    logic: 'AND',
    groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'none' }] }],
  };
  const segment = await call(
    'POST',
    '/segments',
    { name: 'Traced', trackMembership: true, condition },
    { key: project.body.secretKey, baseUrl: url },
  );
  expect(segment.status).toBe(201);
  return project.body.publicKey;
}

beforeAll(async () => {
  const env = await tracedEnv(runId);
  baseUrl = `http://127.0.0.1:${env.PORT}`;
  children.contacts = startPlatform(['contacts'], env, logName('contacts'));
  children.segments = startPlatform(['segments'], { ...env, OTEL_SERVICE_NAME: 'segments-svc' }, logName('segments'));
  children.gateway = startPlatform(['identity', 'gateway'], env, logName('gateway'));
  await waitFor('contacts', () => serviceReady(Number(env.CONTACTS_PORT)), children.contacts);
  await waitFor('segments', () => serviceReady(Number(env.SEGMENTS_PORT)), children.segments);
  await waitFor('gateway', () => httpOk(`${baseUrl}/healthz`), children.gateway);
  publicKey = await projectKey(baseUrl);
}, 90_000);

afterAll(async () => {
  await Promise.all(Object.values(children).map((c) => stopProcess(c)));
  await receiver.close();
  postgres.destroy();
  const nc = await connect({ servers: platform.env.NATS_URL });
  const jsm = await nc.jetstreamManager();
  for await (const s of jsm.streams.list()) {
    if (s.config.name.startsWith(`${runId}_`)) await jsm.streams.delete(s.config.name);
  }
  await nc.drain();
});

/** With an Idempotency-Key: the gateway's idempotency store (Redis) is called inside the request. */
const track = (traceparent: string, key = publicKey, url = baseUrl) =>
  call(
    'POST',
    '/v1/track',
    { email: uniqueEmail('traced'), event: 'trace-checked' },
    { key, baseUrl: url, headers: { traceparent, 'Idempotency-Key': `idem-${hex(8)}` } },
  );

const inTrace = (traceId: string) => receiver.spans.filter((s) => s.traceId === traceId);

/** The one span of the trace that matches, with a readable failure listing the trace when none or several do. */
function only(spans: ReceivedSpan[], what: string, match: (s: ReceivedSpan) => boolean): ReceivedSpan {
  const found = spans.filter(match);
  if (found.length !== 1) {
    const list = spans.map((s) => `${s.service}/${s.attributes['platform.service']} ${s.kind} ${s.name}`).join('\n');
    throw new Error(`${what}: ${found.length} spans match in this trace:\n${list}`);
  }
  return found[0];
}

/** Whether `span` descends from `ancestor` through parents recorded in the trace. */
function descends(spans: ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  for (let s: ReceivedSpan | undefined = span; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined) {
    if (s.parentSpanId === ancestor.spanId) return true;
  }
  return false;
}

/** Every span's parent is in the trace, save the root's (the caller's span, not exported). */
function orphans(spans: ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] {
  const ids = new Set(spans.map((s) => s.spanId));
  return spans.filter((s) => s !== root && !ids.has(s.parentSpanId ?? ''));
}

const consumed = (s: ReceivedSpan) => s.kind === CONSUMER && s.name === 'process events.tracked';
/**
 * The trace once the consumer span is in and every span but the root has its parent exported: spans are exported
 * as they end, so a parent still running (another consumer of the same message) is missing for a moment.
 */
const settledTrace = (traceId: string) =>
  eventually(
    async () => {
      const spans = inTrace(traceId);
      const ids = new Set(spans.map((s) => s.spanId));
      const parentless = spans.filter((s) => !ids.has(s.parentSpanId ?? '')).length;
      return spans.some(consumed) && parentless === 1 ? spans : undefined;
    },
    20_000,
    'the consumer span, every parent exported',
  );
const TRACK_RPC = 'svc.contacts.v1.ContactsService/TrackEvent';
const TRACK_BATCH_RPC = 'svc.contacts.v1.ContactsService/TrackEvents';

function logLines(name: string): Array<Record<string, unknown>> {
  return readFileSync(path.join(ROOT, '.test-run', 'logs', `${logName(name)}.log`), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('one /v1/track is one trace: gateway, RPC to contacts, outbox relay, the consumer in segments', async () => {
  // Not sampled by the caller: the parent-based sampler records nothing of it, in any process.
  const unsampledTrace = hex(16);
  expect((await track(`00-${unsampledTrace}-${hex(8)}-00`)).status).toBe(200);

  const traceId = hex(16);
  const callerSpan = hex(8);
  expect((await track(`00-${traceId}-${callerSpan}-01`)).status).toBe(200);

  const spans = await settledTrace(traceId);

  // The gateway's HTTP span continues the caller's trace; identity and the gateway share a process (resource).
  const http = only(
    spans,
    'the HTTP server span',
    (s) => s.kind === SERVER && s.scope.endsWith('instrumentation-http'),
  );
  expect(http).toMatchObject({
    parentSpanId: callerSpan,
    service: 'platform',
    name: 'POST /v1/track',
    attributes: expect.objectContaining({ 'platform.service': 'gateway', 'http.route': '/v1/track' }),
  });
  expect(spans.some((s) => s.scope.endsWith('instrumentation-express') && descends(spans, s, http))).toBe(true);
  // Redis (the idempotency store) answered inside the request.
  expect(spans.some((s) => s.scope.endsWith('instrumentation-ioredis') && descends(spans, s, http))).toBe(true);

  // gateway -> contacts: the gateway sends concurrent tracks in one TrackEvents call (TRACK_BATCH_WINDOW_MS), so
  // the call has a trace of its own; the request's item is a span of the request's trace in contacts, under
  // the HTTP span (the item's traceparent), linked to the batch call's server span.
  const item = only(spans, 'the track item span', (s) => s.name === 'TrackEvents item');
  expect(item).toMatchObject({ parentSpanId: http.spanId, service: 'contacts' });
  expect(item.attributes['platform.service']).toBe('contacts');
  expect(item.links).toHaveLength(1);
  const batchServer = receiver.spans.find((s) => s.spanId === item.links[0].spanId);
  expect(batchServer).toMatchObject({ kind: SERVER, name: TRACK_BATCH_RPC, service: 'contacts' });
  expect(batchServer!.attributes['rpc.grpc.status_code']).toBe(0);
  const batchClient = receiver.spans.find((s) => s.spanId === batchServer!.parentSpanId);
  expect(batchClient).toMatchObject({ kind: CLIENT, name: TRACK_BATCH_RPC, service: 'platform' });
  expect(batchClient!.attributes).toMatchObject({ 'platform.service': 'gateway', 'rpc.system': 'grpc' });
  // The item's database work (the group commit's statements) is in the request's trace, under the item.
  const queries = spans.filter((s) => s.scope.endsWith('instrumentation-pg') && s.service === 'contacts');
  expect(queries.length).toBeGreaterThan(0);
  expect(queries.every((s) => s.attributes['platform.service'] === 'contacts')).toBe(true);
  expect(queries.some((s) => descends(spans, s, item))).toBe(true);

  // The outbox row carried the item's span: the relay's publish continues it after the commit.
  const publish = only(spans, 'the relay publish', (s) => s.kind === PRODUCER && s.name === 'publish events.tracked');
  expect(publish).toMatchObject({ parentSpanId: item.spanId, service: 'contacts' });
  expect(publish.attributes).toMatchObject({
    'messaging.system': 'nats',
    'messaging.destination.name': 'events.tracked',
  });

  // ... and the JetStream message header carried the publish: segments' consumer is its child.
  const consumer = only(spans, 'the segments consumer', (s) => consumed(s) && s.service === 'segments-svc');
  expect(consumer.parentSpanId).toBe(publish.spanId);
  expect(consumer.attributes).toMatchObject({
    'platform.service': 'segments',
    'messaging.system': 'nats',
    'messaging.consumer.group.name': 'segments-membership',
    'messaging.message.id': publish.attributes['messaging.message.id'],
  });
  // The consumer's own reads run under it.
  expect(spans.some((s) => s.scope.endsWith('instrumentation-pg') && descends(spans, s, consumer))).toBe(true);

  // One connected trace: every span's parent is in it, save the HTTP span's (the caller's).
  expect(orphans(spans, http)).toEqual([]);
  expect(inTrace(unsampledTrace)).toEqual([]);
  // OTEL_EXPORTER_OTLP_HEADERS went with every export.
  expect(receiver.exports.every((h) => h['x-collector-token'] === 'tracing-test')).toBe(true);

  // Log lines inside the request carry its trace id (and, in a span, the span's id).
  const gatewayLine = logLines('gateway').find((l) => l.route === '/v1/track' && l.traceId === traceId);
  expect(gatewayLine).toBeDefined();
  // The contacts line of the request's item, written inside its span.
  const itemLine = logLines('contacts').find((l) => l.msg === 'track handled' && l.traceId === traceId);
  expect(itemLine).toMatchObject({ procedure: 'TrackEvents', spanId: item.spanId });
  const consumerLine = logLines('segments').find((l) => l.msg === 'bus message handled' && l.traceId === traceId);
  expect(consumerLine).toBeDefined();
});

test('in one process (in-process bus, a TrackEvent call per request): spans told apart by service', async () => {
  const env = await tracedEnv(`${runId}_one`);
  const url = `http://127.0.0.1:${env.PORT}`;
  const child = startPlatform(
    ['identity', 'contacts', 'segments', 'gateway'],
    { ...env, NATS_URL: '', TRACK_BATCH_WINDOW_MS: '0' },
    logName('one'),
  );
  children.one = child;
  await waitFor('one process', () => httpOk(`${url}/healthz`), child, 60_000);
  const key = await projectKey(url);

  const traceId = hex(16);
  expect((await track(`00-${traceId}-${hex(8)}-01`, key, url)).status).toBe(200);
  const spans = await settledTrace(traceId);
  expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['platform']));
  const http = only(
    spans,
    'the HTTP server span',
    (s) => s.kind === SERVER && s.scope.endsWith('instrumentation-http'),
  );
  expect(http.attributes['platform.service']).toBe('gateway');
  // gateway -> contacts over gRPC: the client span is the server span's parent.
  const rpcClient = only(spans, 'the gRPC client span', (s) => s.kind === CLIENT && s.name === TRACK_RPC);
  expect(rpcClient.attributes).toMatchObject({ 'platform.service': 'gateway', 'rpc.system': 'grpc' });
  expect(descends(spans, rpcClient, http)).toBe(true);
  const rpcServer = only(spans, 'the gRPC server span', (s) => s.kind === SERVER && s.name === TRACK_RPC);
  expect(rpcServer.parentSpanId).toBe(rpcClient.spanId);
  expect(rpcServer.attributes).toMatchObject({ 'platform.service': 'contacts', 'rpc.grpc.status_code': 0 });
  const publish = only(spans, 'the relay publish', (s) => s.kind === PRODUCER && s.name === 'publish events.tracked');
  expect(publish.parentSpanId).toBe(rpcServer.spanId);
  expect(publish.attributes).toMatchObject({ 'platform.service': 'contacts', 'messaging.system': 'in-process' });
  const consumer = only(spans, 'the segments consumer', consumed);
  expect(consumer).toMatchObject({ parentSpanId: publish.spanId });
  expect(consumer.attributes['platform.service']).toBe('segments');
  // A database span takes the service of the hop it runs in (identity's when the key was not cached).
  const queries = spans.filter((s) => s.scope.endsWith('instrumentation-pg'));
  expect(queries.filter((s) => descends(spans, s, rpcServer)).map((s) => s.attributes['platform.service'])).toEqual(
    expect.arrayContaining(['contacts']),
  );
  // Under the consumer: segments' own statements, and contacts' for the membership match it asks for.
  const consumerQueries = queries.filter((s) => descends(spans, s, consumer));
  expect(consumerQueries.some((s) => s.attributes['platform.service'] === 'segments')).toBe(true);
  expect(
    consumerQueries.every((s) => ['segments', 'contacts'].includes(String(s.attributes['platform.service']))),
  ).toBe(true);
  expect(
    queries.every((s) => ['identity', 'contacts', 'segments'].includes(String(s.attributes['platform.service']))),
  ).toBe(true);
  expect(orphans(spans, http)).toEqual([]);
});
