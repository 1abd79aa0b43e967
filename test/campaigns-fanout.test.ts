import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { call, eventually, expectEnvelope, platform, sessionCookie, uniqueEmail } from './support/client.js';
import { publishDns, smtpAttempts, uniqueDomain } from './support/messaging.js';
import {
  freePort,
  freeServicePorts,
  httpOk,
  serviceReady,
  startPlatform,
  stopProcess,
  waitFor,
} from './support/processes.js';

/**
 * The fan-out under stress, on a platform of our own: the campaigns service runs in its own process
 * (so it can be killed mid-send and started again), with a small send window and batch and a slow
 * per-project delivery throttle, so a send of a hundred recipients takes seconds. Mail goes to the
 * shared test SMTP sink, whose per-address attempt counter tells how many messages each got.
 */
const runId = `cfan${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
/** A database on the shared platform's PostgreSQL server (TEST_DATABASE_URL's, else the local one). */
const pgUrl = (database: string) => {
  const u = new URL(platform.env.DATABASE_URL);
  u.pathname = `/${database}`;
  return u.toString();
};
let env: Record<string, string>;
let baseUrl: string;
let core: ChildProcess;
const workers: ChildProcess[] = [];
let key: string;
let domain: string;

const c = (method: string, url: string, body?: unknown) => call(method, url, body, { key, baseUrl });

function startCampaigns(name: string, port = env.CAMPAIGNS_PORT): ChildProcess {
  const child = startPlatform(['campaigns'], { ...env, CAMPAIGNS_PORT: port }, `${runId}-${name}`);
  workers.push(child);
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

beforeAll(async () => {
  const port = await freePort();
  env = {
    ...platform.env,
    ...(await freeServicePorts()),
    DATABASE_URL: pgUrl(runId),
    BUS_PREFIX: runId,
    SERVICE_TOKEN: `campaigns-fanout-token-${runId}-0123456789`,
    PORT: String(port),
    PUBLIC_URL: `http://localhost:${port}`,
    SEND_RATE_PER_SECOND: '25',
    CAMPAIGN_BATCH_SIZE: '10',
    CAMPAIGN_SEND_WINDOW: '20',
    CAMPAIGN_LEASE_SECONDS: '2',
    CAMPAIGN_POLL_MS: '100',
    // A greylisted (`tempfail-`) recipient's mail waits in messaging's queue for ten minutes before its retry.
    SEND_RETRY_BASE_MS: '600000',
  };
  baseUrl = `http://127.0.0.1:${port}`;
  const first = startCampaigns('campaigns-1');
  core = startPlatform(['identity', 'contacts', 'messaging', 'segments', 'gateway'], env, `${runId}-core`);
  await waitFor('campaigns', () => serviceReady(Number(env.CAMPAIGNS_PORT)), first, 60_000);
  await waitFor('platform', () => httpOk(`${baseUrl}/healthz`), core, 60_000);

  const email = uniqueEmail('owner');
  const signup = await call('POST', '/auth/signup', { email, password: 'password-123' }, { baseUrl });
  const cookie = sessionCookie(signup.headers);
  const project = await call('POST', '/users/@me/projects', { name: 'Fan-out' }, { cookie, baseUrl });
  key = project.body.secretKey;
  domain = uniqueDomain('fan');
  const created = await c('POST', '/domains', { domain, projectId: project.body.id });
  for (const r of created.body.records) await publishDns(r.name, r.type, r.value);
  expect((await c('GET', `/domains/${created.body.id}/verify`)).body.status).toBe('verified');
}, 120_000);

afterAll(async () => {
  await Promise.all([...workers, core].filter(Boolean).map((p) => stopProcess(p, 5000)));
  const admin = new pg.Client({ connectionString: pgUrl('postgres') });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
    `${runId}%`,
  ]);
  for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
  await admin.end();
});

/** `n` subscribed contacts with data.batch = `batch`. */
async function audience(batch: string, n: number): Promise<string[]> {
  return (await audienceContacts(batch, n)).map((x) => x.email);
}

/** `n` subscribed contacts with data.batch = `batch`, in contact id order (the hand-over's order). */
async function audienceContacts(batch: string, n: number): Promise<{ id: string; email: string }[]> {
  const emails = Array.from({ length: n }, () => uniqueEmail(batch));
  const out: { id: string; email: string }[] = [];
  for (let i = 0; i < emails.length; i += 10) {
    await Promise.all(
      emails.slice(i, i + 10).map(async (email) => {
        const res = await c('POST', '/contacts', { email, subscribed: true, data: { batch } });
        if (res.status !== 201) throw new Error(`contact: ${res.status}`);
        out.push({ id: res.body.id, email });
      }),
    );
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : 1));
}

async function sendTo(batch: string): Promise<string> {
  const created = await c('POST', '/campaigns', {
    name: `Batch ${batch}`,
    subject: 'News for {{batch}}',
    body: '<p>Hello {{email}}</p>',
    from: `news@${domain}`,
    audienceType: 'FILTERED',
    audienceCondition: {
      logic: 'AND',
      groups: [{ filters: [{ field: 'data.batch', operator: 'equals', value: batch }] }],
    },
  });
  expect(created.status).toBe(201);
  const sent = await c('POST', `/campaigns/${created.body.data.id}/send`);
  expect(sent.body.data.status).toBe('SENDING');
  return created.body.data.id;
}

/** Messages the sink took for each address. */
const attempts = (emails: string[]) => Promise.all(emails.map((e) => smtpAttempts(e)));
const reached = async (emails: string[]) => (await attempts(emails)).filter((n) => n > 0).length;
const get = async (id: string) => (await c('GET', `/campaigns/${id}`)).body;

test('killed mid-send, restarted as two replicas: every recipient gets exactly one message', async () => {
  const batch = `crash${Date.now().toString(36)}`;
  const emails = await audience(batch, 120);
  const id = await sendTo(batch);
  await eventually(async () => ((await reached(emails)) >= 25 ? true : undefined), 30_000, 'first messages');
  await kill(workers[0]);
  const midway = await reached(emails);
  expect(midway).toBeLessThan(emails.length);
  // The gateway cannot reach campaigns now: its database tells the state.
  const db = new pg.Client({ connectionString: pgUrl(`${runId}_campaigns`) });
  await db.connect();
  const row = await db
    .query('SELECT status, total_recipients FROM campaigns WHERE id = $1', [id])
    .finally(() => db.end());
  expect(row.rows[0]).toMatchObject({ status: 'SENDING' });

  // Two replicas take over once the dead one's lease expires; they never work on the campaign at once.
  const second = startCampaigns('campaigns-2');
  const third = startCampaigns('campaigns-3', String(await freePort()));
  await waitFor('campaigns again', () => serviceReady(Number(env.CAMPAIGNS_PORT)), second, 60_000);
  await eventually(async () => ((await get(id)).status === 'SENT' ? true : undefined), 60_000, 'SENT');
  await eventually(async () => ((await reached(emails)) === emails.length ? true : undefined), 60_000, 'all reached');
  // sentCount follows the emails.sent messages, once per recipient: all queued mail went out.
  await eventually(async () => ((await get(id)).sentCount === emails.length ? true : undefined), 30_000, 'sentCount');
  const counts = await attempts(emails);
  expect(counts.filter((n) => n !== 1)).toEqual([]);
  expect(await get(id)).toMatchObject({ status: 'SENT', totalRecipients: emails.length, sentCount: emails.length });
  await kill(third);
}, 180_000);

test('cancel while SENDING: recipients not yet handed over get nothing; DELETE while SENDING is 409', async () => {
  const batch = `cancel${Date.now().toString(36)}`;
  const emails = await audience(batch, 100);
  const id = await sendTo(batch);
  await eventually(async () => ((await reached(emails)) >= 10 ? true : undefined), 30_000, 'first messages');
  const del = await c('DELETE', `/campaigns/${id}`);
  expectEnvelope(del, 409, 'CONFLICT');
  expect(del.body.error.message).toContain('SENDING');
  const cancelled = await c('POST', `/campaigns/${id}/cancel`);
  expect(cancelled.body).toMatchObject({ success: true, data: { id, status: 'CANCELLED' } });

  // What was handed over before the cancel (at most the send window and a batch) still goes out; then nothing.
  let last = -1;
  const settled = await eventually(
    async () => {
      const now = await reached(emails);
      const stats = (await c('GET', `/campaigns/${id}/stats`)).body;
      const done = now === last && stats.sent === stats.queued;
      last = now;
      return done ? now : undefined;
    },
    30_000,
    'sending to stop',
  );
  const stats = (await c('GET', `/campaigns/${id}/stats`)).body;
  expect(stats.status).toBe('CANCELLED');
  expect(stats.pending).toBeGreaterThan(0);
  expect(settled).toBeLessThan(emails.length);
  expect(settled).toBe(stats.queued);
  expect((await attempts(emails)).every((n) => n <= 1)).toBe(true);
  for (const [method, path] of [
    ['POST', '/send'],
    ['POST', '/cancel'],
    ['PUT', ''],
  ] as const) {
    const res = await c(method, `/campaigns/${id}${path}`, method === 'PUT' ? { name: 'x' } : undefined);
    expectEnvelope(res, 409, 'CONFLICT');
    expect(res.body.error.message).toContain('CANCELLED');
  }
  expect((await c('DELETE', `/campaigns/${id}`)).status).toBe(204);
}, 120_000);

test('a contact who unsubscribes during the send gets nothing: withheld as unsubscribed at hand-over', async () => {
  const batch = `unsub${Date.now().toString(36)}`;
  const people = await audienceContacts(batch, 150);
  const emails = people.map((p) => p.email);
  const id = await sendTo(batch);
  await eventually(async () => ((await reached(emails)) >= 1 ? true : undefined), 30_000, 'first messages');
  // The last 20 in hand-over order are still waiting when they leave: at most the send window (20) and a
  // batch are handed over ahead of the throttled delivery (25/s), 100 recipients more stand before them.
  const leaving = people.slice(-20);
  const patched = await Promise.all(leaving.map((p) => c('PATCH', `/contacts/${p.id}`, { subscribed: false })));
  expect(patched.map((r) => r.status)).toEqual(leaving.map(() => 200));
  await eventually(async () => ((await get(id)).status === 'SENT' ? true : undefined), 60_000, 'SENT');
  const staying = emails.slice(0, -20);
  await eventually(async () => ((await reached(staying)) === staying.length ? true : undefined), 60_000, 'all others');
  expect(await attempts(leaving.map((p) => p.email))).toEqual(leaving.map(() => 0));
  const stats = (await c('GET', `/campaigns/${id}/stats`)).body;
  expect(stats).toMatchObject({ totalRecipients: 150, suppressed: 20, queued: 130, pending: 0 });
  // messaging recorded them as withheld, with the reason.
  const withheld = await c('GET', `/emails?campaignId=${id}&status=suppressed&limit=100`);
  expect(withheld.body.data.map((e: { to: string }) => e.to).sort()).toEqual(leaving.map((p) => p.email).sort());
  expect(withheld.body.data.every((e: { reason: string }) => e.reason === 'unsubscribed')).toBe(true);
}, 120_000);

test('queued marketing mail of an unsubscribing contact is withdrawn: never sent, counted as suppressed', async () => {
  const batch = `wd${Date.now().toString(36)}`;
  // Greylisted on their first attempt, these two wait in messaging's queue for a retry after the campaign is SENT.
  const held: { id: string; email: string }[] = [];
  for (const tag of ['tempfail-wa', 'tempfail-wb']) {
    const email = uniqueEmail(tag);
    const res = await c('POST', '/contacts', { email, subscribed: true, data: { batch } });
    expect(res.status).toBe(201);
    held.push({ id: res.body.id, email });
  }
  const others = await audience(batch, 3);
  const id = await sendTo(batch);
  await eventually(
    async () => ((await reached([...others, ...held.map((h) => h.email)])) === 5 ? true : undefined),
    30_000,
    'first attempts',
  );
  await eventually(async () => ((await get(id)).status === 'SENT' ? true : undefined), 30_000, 'SENT');
  const queued = async () =>
    (await c('GET', `/emails?campaignId=${id}&status=queued&limit=100`)).body.data.map((e: { to: string }) => e.to);
  // The sink has a message before messaging records its delivery batch's outcome: the others leave `queued` soon after.
  const heldTo = held.map((h) => h.email).sort();
  await eventually(async () => (JSON.stringify((await queued()).sort()) === JSON.stringify(heldTo) ? true : undefined));

  const [leaving, staying] = held;
  expect((await c('PATCH', `/contacts/${leaving.id}`, { subscribed: false })).status).toBe(200);
  const withdrawn = await eventually(async () => {
    const res = await c('GET', `/emails?campaignId=${id}&status=suppressed&limit=100`);
    return res.body.data.length ? res.body.data : undefined;
  });
  expect(withdrawn).toEqual([expect.objectContaining({ to: leaving.email, reason: 'unsubscribed' })]);
  // The other greylisted recipient's mail still waits for its retry; the withdrawn one had a single attempt.
  expect(await queued()).toEqual([staying.email]);
  expect(await attempts([leaving.email])).toEqual([1]);
  const stats = await eventually(async () => {
    const body = (await c('GET', `/campaigns/${id}/stats`)).body;
    return body.suppressed === 1 ? body : undefined;
  });
  expect(stats).toMatchObject({ totalRecipients: 5, suppressed: 1, queued: 4, pending: 0 });
  const feed = await eventually(async () => {
    const res = await c('GET', `/activity?type=email.suppressed&contactId=${leaving.id}`);
    return res.body.data.length ? res.body.data : undefined;
  });
  expect(feed[0]).toMatchObject({ email: leaving.email, data: { reason: 'unsubscribed', withdrawn: true } });
}, 120_000);
