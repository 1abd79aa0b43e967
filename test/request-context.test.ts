import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { call, eventually, platform, sessionCookie, uniqueEmail } from './support/client.js';
import { publishDns, uniqueDomain } from './support/messaging.js';
import { freePort, httpOk, serviceReady, ROOT, startPlatform, stopProcess, waitFor } from './support/processes.js';

/**
 * Request id and trace context across every hop, seen in the services' own logs: a platform of
 * our own at LOG_LEVEL=debug (the per-RPC and per-consumed-message lines are debug), gateway,
 * contacts and messaging in three processes, so each hop crosses a real RPC or NATS boundary.
 */
const runId = `rctx${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const children: Partial<Record<'gateway' | 'contacts' | 'messaging', ChildProcess>> = {};
let baseUrl: string;
let tenant: { secretKey: string; publicKey: string; projectId: string };

interface LogLine {
  msg: string;
  requestId?: string;
  traceId?: string;
  procedure?: string;
  subject?: string;
  route?: string;
  projectId?: string;
  ms?: number;
}

const logName = (service: string) => `request-context-${service}`;

function logLines(service: string): LogLine[] {
  const text = readFileSync(path.join(ROOT, '.test-run', 'logs', `${logName(service)}.log`), 'utf8');
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/** Polls a service's log until a line matches. */
const logged = (service: string, what: string, match: (l: LogLine) => boolean) =>
  eventually(async () => logLines(service).find(match), 20_000, `${what} in the ${service} log`);

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

beforeAll(async () => {
  const port = await freePort();
  const env: Record<string, string> = {
    ...platform.env,
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${runId}`,
    BUS_PREFIX: runId,
    LOG_LEVEL: 'debug',
    PORT: String(port),
    PUBLIC_URL: `http://localhost:${port}`,
  };
  for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING']) env[`${s}_PORT`] = String(await freePort());
  baseUrl = `http://127.0.0.1:${port}`;
  children.contacts = startPlatform(['contacts'], env, logName('contacts'));
  children.messaging = startPlatform(['messaging'], env, logName('messaging'));
  await waitFor('contacts', () => serviceReady(Number(env.CONTACTS_PORT)), children.contacts);
  await waitFor('messaging', () => serviceReady(Number(env.MESSAGING_PORT)), children.messaging);
  children.gateway = startPlatform(['identity', 'gateway'], env, logName('gateway'));
  await waitFor('gateway', () => httpOk(`${baseUrl}/healthz`), children.gateway);

  const signup = await call(
    'POST',
    '/auth/signup',
    { email: uniqueEmail('rctx'), password: 'password-123' },
    { baseUrl },
  );
  const cookie = sessionCookie(signup.headers);
  const project = await call('POST', '/users/@me/projects', { name: 'Request context' }, { cookie, baseUrl });
  tenant = { secretKey: project.body.secretKey, publicKey: project.body.publicKey, projectId: project.body.id };
});

afterAll(async () => {
  await Promise.all(Object.values(children).map((c) => stopProcess(c!)));
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
    `${runId}%`,
  ]);
  for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
  await admin.end();
});

test('a /v1/track request id and trace id reach the contacts RPC log and the messaging consumer log', async () => {
  const requestId = `req-track-${hex(8)}`;
  const traceId = hex(16);
  const res = await call(
    'POST',
    '/v1/track',
    { email: uniqueEmail('tracked'), event: 'context-checked' },
    {
      key: tenant.publicKey,
      baseUrl,
      headers: { 'X-Request-Id': requestId, traceparent: `00-${traceId}-${hex(8)}-01` },
    },
  );
  expect(res.status).toBe(200);
  expect(res.headers.get('x-request-id')).toBe(requestId);

  // gateway -> contacts over gRPC (concurrent tracks share one TrackEvents call, each item carrying its
  // request): the handler's log line for this track carries both.
  const rpc = await logged(
    'contacts',
    'the track in a TrackEvents RPC',
    (l) => l.msg === 'track handled' && l.requestId === requestId,
  );
  expect(rpc).toMatchObject({ procedure: 'TrackEvents', traceId });

  // contacts outbox -> NATS -> messaging's activity consumer: the headers survive the relay.
  const consumed = await logged(
    'messaging',
    'the consumed events.tracked message',
    (l) => l.msg === 'bus message handled' && l.subject === 'events.tracked' && l.requestId === requestId,
  );
  expect(consumed.traceId).toBe(traceId);

  // The gateway's own request line carries it too.
  // The gateway's one info line per request: method, route, status, duration, request id, project.
  const gateway = await logged(
    'gateway',
    'the request line',
    (l) => l.route === '/v1/track' && l.requestId === requestId,
  );
  expect(gateway).toMatchObject({ level: 30, method: 'POST', status: 200, msg: 'POST /v1/track 200', traceId });
  expect(gateway.projectId).toEqual(expect.any(String));
  expect(gateway.ms).toEqual(expect.any(Number));
});

test('tracks committed together: each request reaches contacts, their batch messages carry one of them', async () => {
  // Concurrent tracks share one group commit in contacts, whose events go on the bus as one events.tracked_batch per
  // project: each track's item runs in its own request; a batch message carries the first request among its events.
  const ids = Array.from({ length: 20 }, (_, i) => `req-batch-${i}-${hex(6)}`);
  const answers = await Promise.all(
    ids.map((id) =>
      call(
        'POST',
        '/v1/track',
        { email: uniqueEmail('batch'), event: 'batched' },
        { key: tenant.publicKey, baseUrl, headers: { 'X-Request-Id': id } },
      ),
    ),
  );
  expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200));
  const handled = () =>
    logLines('contacts')
      .filter((l) => l.msg === 'track handled' && l.requestId?.startsWith('req-batch-'))
      .map((l) => l.requestId);
  const items = await eventually(
    async () => (handled().length >= ids.length ? handled() : undefined),
    20_000,
    'the tracks in contacts',
  );
  expect([...items].sort()).toEqual([...ids].sort());
  // Every event reached the activity feed, through messages each carrying one of the tracks' requests.
  await eventually(
    async () => {
      const feed = await call('GET', '/activity?type=event&limit=100', undefined, { key: tenant.secretKey, baseUrl });
      return feed.body.data?.filter((r: { name: string }) => r.name === 'batched').length === ids.length
        ? true
        : undefined;
    },
    20_000,
    'the batched events in the feed',
  );
  const consumed = logLines('messaging').filter(
    (l) =>
      l.msg === 'bus message handled' && l.subject === 'events.tracked_batch' && l.requestId?.startsWith('req-batch-'),
  );
  expect(consumed.length).toBeGreaterThan(0);
  expect(consumed.length).toBeLessThanOrEqual(ids.length);
  for (const l of consumed) expect(ids).toContain(l.requestId);
});

test('a /v1/send request id reaches contacts through messaging (a second RPC hop) with the same trace id', async () => {
  const domain = uniqueDomain('rctx');
  const created = await call(
    'POST',
    '/domains',
    { domain, projectId: tenant.projectId },
    { key: tenant.secretKey, baseUrl },
  );
  expect(created.status).toBe(201);
  for (const r of created.body.records) await publishDns(r.name, r.type, r.value);
  const verified = await call('GET', `/domains/${created.body.id}/verify`, undefined, {
    key: tenant.secretKey,
    baseUrl,
  });
  expect(verified.body.status).toBe('verified');

  const requestId = `req-send-${hex(8)}`;
  const traceId = hex(16);
  const res = await call(
    'POST',
    '/v1/send',
    { to: uniqueEmail('to'), from: `news@${domain}`, subject: 'Hi', body: '<p>Hi</p>' },
    {
      key: tenant.secretKey,
      baseUrl,
      headers: { 'X-Request-Id': requestId, traceparent: `00-${traceId}-${hex(8)}-01` },
    },
  );
  expect(res.status).toBe(200);

  // The gateway sends concurrent requests in one SendEmails call: each item is logged under its own request id.
  const send = await logged(
    'messaging',
    'the send RPC',
    (l) => (l.msg === 'rpc handled' || l.msg === 'send handled') && l.requestId === requestId,
  );
  expect(send.traceId).toBe(traceId);
  const upsert = await logged(
    'contacts',
    'the contact upsert called by messaging',
    (l) => l.msg === 'rpc handled' && l.requestId === requestId && /^Upsert/.test(l.procedure ?? ''),
  );
  expect(upsert.traceId).toBe(traceId);
});

test('a malformed traceparent is replaced by a minted trace; a bad X-Request-Id by a minted id', async () => {
  const res = await call(
    'POST',
    '/v1/track',
    { email: uniqueEmail('tracked'), event: 'context-minted' },
    { key: tenant.publicKey, baseUrl, headers: { 'X-Request-Id': 'bad id!', traceparent: '00-zz-00-01' } },
  );
  expect(res.status).toBe(200);
  const requestId = res.headers.get('x-request-id')!;
  expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);
  const rpc = await logged(
    'contacts',
    'the track in a TrackEvents RPC',
    (l) => l.msg === 'track handled' && l.requestId === requestId,
  );
  expect(rpc.traceId).toMatch(/^[0-9a-f]{32}$/);
});
