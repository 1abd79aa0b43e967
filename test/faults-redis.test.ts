import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { call, platform, sessionCookie, type Answer, uniqueEmail } from './support/client.js';
import { publishDns, uniqueDomain, waitForMail } from './support/messaging.js';
import { PrivateRedis } from './support/private-redis.js';
import { freePort, httpOk, ROOT, startPlatform, stopProcess, waitFor } from './support/processes.js';

/**
 * Redis faults against a platform of our own (identity, contacts, messaging and gateway in one
 * distributed-mode process) and a redis-server of our own: keyed requests stay fast while Redis
 * is frozen or down (fail-open limiter, key cache misses, no claim), the shared limiter is used
 * again when it is back, and an Idempotency-Key never sends twice when Redis loses its data.
 */
const runId = `fredis${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const LOG = 'faults-redis';
const redis = await PrivateRedis.create();
let child: ChildProcess;
let baseUrl: string;
let projectId: string;
let secretKey: string;
let publicKey: string;
let inspect: Redis;

/** One keyed request, timed. */
async function timed(kind: 'secret' | 'public'): Promise<{ res: Answer; ms: number }> {
  const started = Date.now();
  const res =
    kind === 'secret'
      ? await call('GET', '/contacts?limit=1', undefined, { key: secretKey, baseUrl })
      : await call('POST', '/v1/track', { email: uniqueEmail('fault'), event: 'ping' }, { key: publicKey, baseUrl });
  return { res, ms: Date.now() - started };
}

async function expectFastKeyedRequests(count: number, maxMs: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const { res, ms } = await timed(i % 2 ? 'public' : 'secret');
    expect(res.status).toBe(200);
    expect(ms).toBeLessThan(maxMs);
  }
}

/** Until Redis counts the requests again: a request writes the project's bucket there, as its header says. */
async function expectSharedLimiter(): Promise<void> {
  const key = `${runId}:rl:api:${projectId}`;
  await waitFor(
    'shared rate limiter',
    async () => {
      await inspect.del(key);
      const remaining = Number((await timed('secret')).res.headers.get('x-ratelimit-remaining'));
      const tokens = await inspect.hget(key, 't');
      return tokens !== null && Math.floor(Number(tokens)) === remaining;
    },
    undefined,
    10_000,
  );
}

const send = (body: unknown, key: string) =>
  call('POST', '/v1/send', body, { key: secretKey, baseUrl, headers: { 'idempotency-key': key } });

async function queuedEmails(to: string): Promise<number> {
  const db = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${runId}_messaging` });
  await db.connect();
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM emails WHERE to_email = $1', [to]);
  await db.end();
  return rows[0].n;
}

beforeAll(async () => {
  await redis.start();
  inspect = new Redis(redis.url, { lazyConnect: true, enableOfflineQueue: true, retryStrategy: () => 200 });
  inspect.on('error', () => undefined);
  const port = await freePort();
  const env: Record<string, string> = {
    ...platform.env,
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${runId}`,
    REDIS_URL: redis.url,
    BUS_PREFIX: runId,
    SESSION_SECRET: 'fault-test-session-secret-0123',
    SERVICE_TOKEN: 'fault-test-service-token-0123456789',
    PORT: String(port),
    PUBLIC_URL: `http://localhost:${port}`,
  };
  for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING']) env[`${s}_PORT`] = String(await freePort());
  baseUrl = `http://127.0.0.1:${port}`;
  child = startPlatform(['identity', 'contacts', 'messaging', 'gateway'], env, LOG);
  await waitFor('platform', () => httpOk(`${baseUrl}/healthz`), child, 30_000);

  const owner = { email: uniqueEmail('owner'), password: 'password-123' };
  const signup = await call('POST', '/auth/signup', owner, { baseUrl });
  const cookie = sessionCookie(signup.headers);
  const project = await call('POST', '/users/@me/projects', { name: 'Redis faults' }, { cookie, baseUrl });
  expect(project.status).toBe(201);
  ({ id: projectId, secretKey, publicKey } = project.body);
});

afterAll(async () => {
  if (child) await stopProcess(child);
  inspect?.disconnect();
  await redis.kill();
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  const sql = 'SELECT datname FROM pg_database WHERE datname LIKE $1';
  const { rows } = await admin.query<{ datname: string }>(sql, [`${runId}%`]);
  for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
  await admin.end();
});

test('Redis frozen (SIGSTOP): keyed requests answer 2xx in bounded time, and after SIGCONT too', async () => {
  await expectSharedLimiter();
  redis.freeze();
  try {
    await expectFastKeyedRequests(12, 1500);
  } finally {
    redis.thaw();
  }
  await expectFastKeyedRequests(4, 1500);
  await expectSharedLimiter();
});

test('Redis killed: keyed requests and an idempotent send work; restarted, the shared limiter is back', async () => {
  await redis.kill();
  await expectFastKeyedRequests(20, 1000);

  // No shared claim while Redis is down: messaging's own record still stops the second send.
  const domain = await verifiedDomain();
  const to = uniqueEmail('down');
  const body = { from: `app@${domain}`, to, subject: 'Redis down', body: '<p>Once</p>' };
  const first = await send(body, 'send-while-redis-down');
  expect(first.status).toBe(200);
  const again = await send(body, 'send-while-redis-down');
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.body).toEqual(first.body);
  expect(await queuedEmails(to)).toBe(1);

  // Tracking with Redis down: the pixel is served, the open recorded once, a repeat deduplicated in-process.
  const [mail] = await waitForMail(to);
  const pixel = /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(String(mail.parsed.html))![1];
  for (let i = 0; i < 2; i++) expect((await fetch(pixel)).status).toBe(200);
  const email = await call('GET', `/emails/${first.body.data.emails[0].email}`, undefined, { key: secretKey, baseUrl });
  expect(email.body.opens).toBe(1);

  await redis.start();
  await expectSharedLimiter();

  const log = readFileSync(path.join(ROOT, '.test-run', 'logs', `${LOG}.log`), 'utf8');
  expect(log).not.toContain('Unhandled error event');
  const changes = log
    .split('\n')
    .filter((l) => l.includes('"dependency":"redis"'))
    .map((l) => JSON.parse(l));
  // One line per change (frozen: down, up; killed: down, up), not one per request or reconnect attempt. The
  // gateway has one connection, contacts one (billing caps), messaging two (billing caps; send throttle and
  // tracking marks).
  const of = (service?: string) => changes.filter((c) => c.service === service).length;
  expect(of(undefined)).toBeGreaterThanOrEqual(4);
  expect(of(undefined)).toBeLessThanOrEqual(6);
  expect(of('contacts')).toBeLessThanOrEqual(6);
  expect(of('messaging')).toBeLessThanOrEqual(12);
  expect(changes.length).toBe(of(undefined) + of('contacts') + of('messaging'));
});

test('Idempotency-Key: a Redis that lost its data does not send twice; another request with it is a 409', async () => {
  const domain = await verifiedDomain();
  const to = uniqueEmail('once');
  const body = { from: `app@${domain}`, to, subject: 'Only once', body: '<p>Hello</p>' };
  const first = await send(body, 'order-42');
  expect(first.status).toBe(200);
  expect(first.headers.get('idempotent-replayed')).toBeNull();

  await inspect.flushall();
  const retry = await send(body, 'order-42');
  expect(retry.status).toBe(200);
  expect(retry.headers.get('idempotent-replayed')).toBe('true');
  expect(retry.body.emails).toEqual(first.body.emails);

  await inspect.flushall();
  const other = await send({ ...body, subject: 'Something else' }, 'order-42');
  expect(other.status).toBe(409);
  expect(other.body.error).toMatchObject({
    code: 'IDEMPOTENCY_KEY_REUSED',
    details: { key: 'order-42', originalRequest: { method: 'POST', path: '/v1/send' }, originalStatusCode: 200 },
  });

  expect(await queuedEmails(to)).toBe(1);
  expect(await waitForMail(to, 1)).toHaveLength(1);
});

/** A sender domain of our own platform, published on the shared test DNS server. */
async function verifiedDomain(): Promise<string> {
  const domain = uniqueDomain('redis');
  const created = await call('POST', '/domains', { domain, projectId }, { key: secretKey, baseUrl });
  expect(created.status).toBe(201);
  for (const r of created.body.records) await publishDns(r.name, r.type, r.value);
  const verified = await call('GET', `/domains/${created.body.id}/verify`, undefined, { key: secretKey, baseUrl });
  expect(verified.body.status).toBe('verified');
  return domain;
}
