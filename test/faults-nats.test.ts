import type { ChildProcess } from 'node:child_process';
import { connect, type NatsConnection } from 'nats';
import pg from 'pg';
import { call, eventually, platform, sessionCookie, uniqueEmail } from './support/client.js';
import { PrivateNats } from './support/private-nats.js';
import { freePort, httpOk, startPlatform, stopProcess, waitFor } from './support/processes.js';

/**
 * NATS faults against a platform of our own (identity, contacts, messaging and gateway in one
 * distributed-mode process) and a nats-server of our own: the platform must start and take
 * tracks while the broker is down, and survive the loss of its JetStream streams under load.
 */
const runId = `fnats${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const nats = await PrivateNats.create();
let child: ChildProcess;
let baseUrl: string;
let secretKey: string;
let publicKey: string;

async function activityTotal(): Promise<number> {
  const res = await call('GET', '/activity?limit=1', undefined, { key: secretKey, baseUrl });
  if (res.status !== 200) throw new Error(`GET /activity: ${res.status}`);
  return res.body.total as number;
}

const track = (email: string, event: string) =>
  call('POST', '/v1/track', { email, event }, { key: publicKey, baseUrl });

/** Polls until messaging's feed holds `expected` events. */
const feedReaches = (expected: number, what: string, timeoutMs = 20_000) =>
  eventually(async () => ((await activityTotal()) === expected ? true : undefined), timeoutMs, what);

beforeAll(async () => {
  const port = await freePort();
  const env: Record<string, string> = {
    ...platform.env,
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${runId}`,
    NATS_URL: nats.url,
    REDIS_URL: 'redis://127.0.0.1:6379',
    BUS_PREFIX: runId,
    SESSION_SECRET: 'fault-test-session-secret-0123',
    SERVICE_TOKEN: 'fault-test-service-token-0123456789',
    PORT: String(port),
    PUBLIC_URL: `http://localhost:${port}`,
  };
  for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING']) env[`${s}_PORT`] = String(await freePort());
  baseUrl = `http://127.0.0.1:${port}`;
  // NATS is not running yet: the platform must come up anyway.
  child = startPlatform(['identity', 'contacts', 'messaging', 'gateway'], env, 'faults-nats');
  await waitFor('platform without NATS', () => httpOk(`${baseUrl}/healthz`), child, 30_000);
});

afterAll(async () => {
  if (child) await stopProcess(child);
  await nats.destroy();
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
    `${runId}%`,
  ]);
  for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
  await admin.end();
});

test('starts and takes tracks while NATS is down; the events reach the consumers once NATS starts', async () => {
  const email = uniqueEmail('owner');
  const signup = await call('POST', '/auth/signup', { email, password: 'password-123' }, { baseUrl });
  expect(signup.status).toBe(201);
  const cookie = sessionCookie(signup.headers);
  const project = await call('POST', '/users/@me/projects', { name: 'NATS faults' }, { cookie, baseUrl });
  expect(project.status).toBe(201);
  ({ secretKey, publicKey } = project.body);

  for (let i = 0; i < 5; i++) expect((await track(uniqueEmail('early'), 'signup')).status).toBe(200);
  expect(await activityTotal()).toBe(0);

  await nats.start();
  await feedReaches(5, 'tracked events in the feed');
});

test('deleting the JetStream streams under track load loses nothing and duplicates nothing', async () => {
  const before = await activityTotal();
  const total = 200;
  let sent = 0;
  let nc: NatsConnection | undefined;
  const worker = async () => {
    while (sent < total) {
      sent++;
      if (sent === 60) {
        // Mid-load: every stream of this deployment disappears, with its consumers and unconsumed messages.
        nc = await connect({ servers: nats.url });
        const jsm = await nc.jetstreamManager();
        for (const s of ['CONTACTS', 'EVENTS', 'EMAILS', 'IDENTITY']) await jsm.streams.delete(`${runId}_${s}`);
      }
      expect((await track(uniqueEmail('load'), 'purchase')).status).toBe(200);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  await feedReaches(before + total, 'every event after stream loss');
  // Republished rows that consumers had already handled add nothing: once the outbox is drained and
  // messaging's consumer has nothing pending, the count still holds.
  const outbox = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${runId}_contacts` });
  outbox.on('error', () => undefined); // afterAll drops the database with FORCE
  await outbox.connect();
  const jsm = await nc!.jetstreamManager();
  let seen = '';
  try {
    await eventually(
      async () => {
        const { rows } = await outbox.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL');
        const info = await jsm.consumers.info(`${runId}_EVENTS`, 'messaging-activity_events_tracked');
        seen = `unpublished ${rows[0].n}, pending ${info.num_pending}, unacked ${info.num_ack_pending}`;
        return rows[0].n === 0 && info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
      },
      30_000,
      'outbox drained and consumer caught up',
    ).catch((err) => {
      throw new Error(`${(err as Error).message} (last seen: ${seen})`);
    });
  } finally {
    await outbox.end().catch(() => undefined);
    await nc!.close();
  }
  expect(await activityTotal()).toBe(before + total);
});

test('a broker restarted with an empty store gets streams and consumers back; every event arrives', async () => {
  const before = await activityTotal();
  await nats.stop();
  nats.wipeStore();
  for (let i = 0; i < 10; i++) expect((await track(uniqueEmail('outage'), 'signup')).status).toBe(200);
  await nats.start();
  for (let i = 0; i < 10; i++) expect((await track(uniqueEmail('after'), 'signup')).status).toBe(200);
  await feedReaches(before + 20, 'events after a lost store');
});
