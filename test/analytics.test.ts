import { createClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { MessagingService, SendSource } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { call, eventually, expectEnvelope, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';

// GET /analytics/timeseries and /analytics/top-events through the gateway, with real mail through the test SMTP
// sink: sends, a delivery webhook, a hard bounce, opens and a click land in the bucket of the moment they happened,
// the other buckets of the range answer zeros, a test message and another project's mail count nowhere.

const DAY = 86_400_000;
const HOUR = 3_600_000;
const METRICS = ['sent', 'delivered', 'opened', 'clicked', 'bounced'] as const;
type Counts = Record<(typeof METRICS)[number], number>;
interface Bucket extends Counts {
  date: string;
}

let a: Tenant;
let b: Tenant;
let startedAt: number;
const ZERO: Counts = { sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0 };
/** What tenant a's mail does below: two sent (one delivered, opened twice, clicked), one hard bounce. */
const EXPECTED: Counts = { sent: 2, delivered: 1, opened: 1, clicked: 1, bounced: 1 };

const get = (t: Tenant, query: string) => call('GET', `/analytics/timeseries${query}`, undefined, { key: t.secretKey });
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const counts = (x: Bucket): Counts => ({
  sent: x.sent,
  delivered: x.delivered,
  opened: x.opened,
  clicked: x.clicked,
  bounced: x.bounced,
});
const sum = (data: Bucket[]): Counts =>
  Object.fromEntries(METRICS.map((m) => [m, data.reduce((n, x) => n + x[m], 0)])) as Counts;

function messaging() {
  const auth: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${platform.env.SERVICE_TOKEN}`);
    return next(req);
  };
  const baseUrl = `http://127.0.0.1:${platform.env.MESSAGING_PORT}`;
  return createClient(MessagingService, createGrpcTransport({ baseUrl, interceptors: [auth] }));
}

/** Whether messaging recorded the SMTP acceptance of an email (the sink has it a moment before). */
async function recordedSent(emailId: string): Promise<boolean> {
  const db = new pg.Client({
    connectionString: serviceDatabaseUrl('messaging', platform.env.DATABASE_URL, platform.env),
  });
  await db.connect();
  try {
    const { rows } = await db.query('SELECT sent_at FROM emails WHERE id = $1', [emailId]);
    return rows[0]?.sent_at != null;
  } finally {
    await db.end();
  }
}

const pixelOf = (html: string) => /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1];
const clickOf = (html: string) =>
  [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1].replace(/&amp;/g, '&')).find((h) => h.includes('/t/c/'))!;

beforeAll(async () => {
  startedAt = Date.now();
  [a, b] = await Promise.all([newTenant(), newTenant()]);
  const [da, db] = await Promise.all([verifiedDomain(a), verifiedDomain(b)]);
  const body = '<p>Hello <a href="https://example.org/x">x</a></p>';

  // a: two messages accepted by the sink, one refused for good (5xx: a hard bounce).
  const opened = uniqueEmail('to');
  const delivered = uniqueEmail('to');
  const bounced = uniqueEmail('bounce-x');
  const sent = await call(
    'POST',
    '/v1/send',
    { to: [opened, delivered, bounced], from: `hi@${da.domain}`, subject: 'Hi', body },
    { key: a.secretKey },
  );
  expect(sent.status).toBe(200);
  const [mail] = await waitForMail(opened);
  await waitForMail(delivered);
  const html = String(mail.parsed.html);
  expect((await fetch(pixelOf(html))).status).toBe(200);
  await fetch(pixelOf(html)); // a second open of the same email: still one opened email
  expect((await fetch(clickOf(html), { redirect: 'manual' })).status).toBe(302);
  const hook = await call(
    'POST',
    '/webhooks/generic',
    { type: 'delivery', emailId: sent.body.data.emails[1].email },
    { headers: { 'x-webhook-secret': 'test-webhook-secret-0123456789' } },
  );
  expect(hook.body).toMatchObject({ processed: 1 });

  // a: a test message (as campaigns send them), delivered and opened: counted nowhere.
  const tester = uniqueEmail('to');
  const contact = await call('POST', '/contacts', { email: tester }, { key: a.secretKey });
  const queued = await messaging().queueEmails({
    projectId: a.projectId,
    content: { subject: 'Test', body, from: { email: `hi@${da.domain}` } },
    recipients: [{ contactId: contact.body.id, email: tester, subscribed: true }],
    source: SendSource.CAMPAIGN,
    test: true,
  });
  expect(queued.emails[0].status).toBe('queued');
  const [testMail] = await waitForMail(tester);
  expect((await fetch(pixelOf(String(testMail.parsed.html)))).status).toBe(200);

  // b: one message of its own, opened.
  const other = uniqueEmail('to');
  await call('POST', '/v1/send', { to: other, from: `hi@${db.domain}`, subject: 'B', body }, { key: b.secretKey });
  const [bMail] = await waitForMail(other);
  await fetch(pixelOf(String(bMail.parsed.html)));

  // The worker records outcomes just after the SMTP answer: wait until every one is in before reading the series
  // (the test message's too, so that counting it would show).
  await eventually(async () => {
    const [ra, rb] = await Promise.all([get(a, ''), get(b, '')]);
    const done = ra.body.totals?.sent >= 2 && ra.body.totals.bounced === 1 && rb.body.totals?.sent === 1;
    return done && (await recordedSent(queued.emails[0].emailId)) ? true : undefined;
  });
});

describe('GET /analytics/timeseries', () => {
  test('defaults: the last 30 UTC days, today last, the lifecycle counted in the bucket it happened in', async () => {
    const res = await get(a, '');
    expect(res.status).toBe(200);
    expect(res.body.interval).toBe('day');
    const data: Bucket[] = res.body.data;
    expect(data).toHaveLength(30);
    const today = dayOf(Date.now());
    expect(data[29].date).toBe(`${today}T00:00:00.000Z`);
    expect(data[0].date).toBe(`${dayOf(Date.now() - 29 * DAY)}T00:00:00.000Z`);
    expect(res.body.from).toBe(data[0].date);
    expect(res.body.to).toBe(new Date(Date.parse(data[29].date) + DAY).toISOString());
    for (let i = 1; i < data.length; i++) expect(Date.parse(data[i].date) - Date.parse(data[i - 1].date)).toBe(DAY);
    expect(res.body.totals).toEqual(EXPECTED);
    expect(sum(data)).toEqual(EXPECTED);
    // Everything happened since the test started: only the buckets from then on hold anything (midnight-proof).
    const first = `${dayOf(startedAt)}T00:00:00.000Z`;
    for (const x of data) if (x.date < first) expect(counts(x)).toEqual(ZERO);
  });

  test('by hour over explicit date-times: zero-filled neighbours around the hour of the sends', async () => {
    const from = new Date(startedAt - 3 * HOUR).toISOString();
    const to = new Date(Date.now() + HOUR).toISOString();
    const res = await get(a, `?interval=hour&from=${from}&to=${to}`);
    expect(res.status).toBe(200);
    const data: Bucket[] = res.body.data;
    expect(data.length).toBeGreaterThanOrEqual(5);
    expect(data[0].date).toBe(new Date(Math.floor((startedAt - 3 * HOUR) / HOUR) * HOUR).toISOString());
    expect(sum(data)).toEqual(EXPECTED);
    expect(counts(data[0])).toEqual(ZERO);
    expect(counts(data[1])).toEqual(ZERO);
    expect(counts(data[data.length - 1])).toEqual(ZERO); // the hour after now
  });

  test('date-only bounds cover whole days; a range before any mail is all zeros', async () => {
    const today = dayOf(Date.now());
    const res = await get(a, `?from=${dayOf(startedAt - 2 * DAY)}&to=${today}`);
    expect(res.body.data.map((x: Bucket) => x.date.slice(0, 10))).toEqual(
      [2, 1, 0].map((n) => dayOf(Date.parse(today) - n * DAY)),
    );
    expect(res.body.totals).toEqual(EXPECTED);
    const past = await get(a, '?from=2025-01-01&to=2025-01-03');
    expect(past.body.data.map(counts)).toEqual([ZERO, ZERO, ZERO]);
  });

  test("another project's mail never shows, and its own does", async () => {
    const res = await get(b, '');
    expect(res.body.totals).toEqual({ ...ZERO, sent: 1, opened: 1 });
  });

  test.each([
    ['?from=yesterday', 'from'],
    ['?to=2026-02-30', 'to'],
    ['?from=2026-01-01T10:00:00', 'from'], // no time zone
    ['?interval=week', 'interval'],
  ])('%s is a 400 naming the parameter', async (query, parameter) => {
    const res = await get(a, query);
    expectEnvelope(res, 400, 'BAD_REQUEST');
    expect(res.body.error.details).toMatchObject({ parameter });
  });

  test('from after to and ranges over the caps (366 days, 31 days by hour) are 400s', async () => {
    expectEnvelope(await get(a, '?from=2025-01-02&to=2025-01-01'), 400, 'BAD_REQUEST');
    expect((await get(a, '?from=2024-01-01&to=2024-12-31')).body.data).toHaveLength(366);
    const long = await get(a, '?from=2024-01-01&to=2025-01-01');
    expectEnvelope(long, 400, 'BAD_REQUEST');
    expect(long.body.error.details).toMatchObject({ buckets: 367, maxBuckets: 366 });
    expect((await get(a, '?interval=hour&from=2025-01-01&to=2025-01-31')).body.data).toHaveLength(744);
    expectEnvelope(await get(a, '?interval=hour&from=2025-01-01&to=2025-02-01'), 400, 'BAD_REQUEST');
  });

  test('needs the secret key', async () => {
    expectEnvelope(await call('GET', '/analytics/timeseries', undefined, { key: a.publicKey }), 401, 'INVALID_API_KEY');
  });
});

describe('GET /analytics/top-events', () => {
  const track = (t: Tenant, email: string, event: string) =>
    call('POST', '/v1/track', { email, event }, { key: t.publicKey });

  beforeAll(async () => {
    for (const e of ['signup', 'signup', 'signup', 'purchase', 'purchase', 'login'])
      expect((await track(a, uniqueEmail('ev'), e)).status).toBe(200);
    expect((await track(b, uniqueEmail('ev'), 'b-only')).status).toBe(200);
    // The email lifecycle is recorded as email.* events too (from the bus): wait until contacts has them.
    await eventually(async () => {
      const names = await call('GET', '/events/names', undefined, { key: a.secretKey });
      return names.body.includes('email.open') ? true : undefined;
    });
  });

  test('the most frequent client-tracked names, the platform’s own events left out', async () => {
    const res = await call('GET', '/analytics/top-events', undefined, { key: a.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.days).toBe(30);
    expect(res.body.data.map((e: { name: string; count: number }) => [e.name, e.count])).toEqual([
      ['signup', 3],
      ['purchase', 2],
      ['login', 1],
    ]);
    expect(res.body.data[0]).toMatchObject({ contacts: 3, lastSeen: expect.any(String) });
  });

  test('limit and days; bad values are 422', async () => {
    const top = await call('GET', '/analytics/top-events?limit=1&days=7', undefined, { key: a.secretKey });
    expect(top.body.data.map((e: { name: string }) => e.name)).toEqual(['signup']);
    expectEnvelope(
      await call('GET', '/analytics/top-events?limit=many', undefined, { key: a.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await call('GET', '/analytics/top-events?days=0', undefined, { key: a.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
    const other = await call('GET', '/analytics/top-events', undefined, { key: b.secretKey });
    expect(other.body.data.map((e: { name: string }) => e.name)).toEqual(['b-only']);
  });
});
