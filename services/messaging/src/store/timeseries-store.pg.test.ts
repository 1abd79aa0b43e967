import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { timeseriesRange } from '../domain/email-timeseries.js';
import { migrations } from './migrations.js';
import { TimeseriesStore } from './timeseries-store.js';

// The timeseries query on a real PostgreSQL: buckets by the time of each step, zero-filled, one project only,
// test emails left out, the range's ends exclusive/inclusive as documented; and each step read through its index.

let db: TestDatabase;
let store: TimeseriesStore;
const PROJECT = randomUUID();
const OTHER = randomUUID();

interface Steps {
  sent?: string;
  delivered?: string;
  opened?: string;
  clicked?: string;
  bounced?: string;
  test?: boolean;
}

async function email(projectId: string, s: Steps): Promise<void> {
  await db.pool.query(
    `INSERT INTO emails (id, project_id, contact_id, to_email, from_email, subject, html, text, type, message_id,
       status, sent_at, delivered_at, first_opened_at, first_clicked_at, bounced_at, test)
     VALUES ($1, $2, $3, 'a@b.co', 'x@y.co', 's', '', '', 'TRANSACTIONAL', '<m@y.co>', 'sent', $4, $5, $6, $7, $8, $9)`,
    [
      randomUUID(),
      projectId,
      randomUUID(),
      s.sent ?? null,
      s.delivered ?? null,
      s.opened ?? null,
      s.clicked ?? null,
      s.bounced ?? null,
      s.test ?? false,
    ],
  );
}

beforeAll(async () => {
  db = await createTestDatabase('email_timeseries', migrations);
  store = new TimeseriesStore(db.pool);
  await email(PROJECT, {
    sent: '2026-01-01T09:00:00Z',
    delivered: '2026-01-01T09:01:00Z',
    opened: '2026-01-03T00:00Z',
  });
  await email(PROJECT, { sent: '2026-01-01T23:59:59.999Z', clicked: '2026-01-02T08:00:00Z' });
  await email(PROJECT, { bounced: '2026-01-03T23:00:00Z' });
  await email(PROJECT, { sent: '2025-12-31T23:59:59.999Z' }); // before the range
  await email(PROJECT, { sent: '2026-01-04T00:00:00Z' }); // after the range
  await email(PROJECT, { sent: '2026-01-02T12:00:00Z', opened: '2026-01-02T12:05:00Z', test: true });
  await email(OTHER, { sent: '2026-01-02T12:00:00Z', opened: '2026-01-02T12:05:00Z' });
});

afterAll(async () => {
  await db?.drop();
});

const plain = (rows: Awaited<ReturnType<TimeseriesStore['buckets']>>) =>
  rows.map(({ bucket, ...counts }) => [bucket.toISOString(), counts]);

test('per UTC day, zero-filled, this project only, test emails left out', async () => {
  const rows = await store.buckets(PROJECT, timeseriesRange({ from: '2026-01-01', to: '2026-01-03' }));
  expect(plain(rows)).toEqual([
    ['2026-01-01T00:00:00.000Z', { sent: 2, delivered: 1, opened: 0, clicked: 0, bounced: 0 }],
    ['2026-01-02T00:00:00.000Z', { sent: 0, delivered: 0, opened: 0, clicked: 1, bounced: 0 }],
    ['2026-01-03T00:00:00.000Z', { sent: 0, delivered: 0, opened: 1, clicked: 0, bounced: 1 }],
  ]);
});

test('per hour, every hour of the range answered', async () => {
  const rows = await store.buckets(
    PROJECT,
    timeseriesRange({ from: '2026-01-01T08:00:00Z', to: '2026-01-01T10:59:59Z', interval: 'hour' }),
  );
  expect(plain(rows)).toEqual([
    ['2026-01-01T08:00:00.000Z', { sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0 }],
    ['2026-01-01T09:00:00.000Z', { sent: 1, delivered: 1, opened: 0, clicked: 0, bounced: 0 }],
    ['2026-01-01T10:00:00.000Z', { sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0 }],
  ]);
});

test('each step is a range scan of its own partial index', async () => {
  // A project with a history: queued mail (no step yet) and months of mail sent, opened, clicked, delivered and
  // bounced before the range; only range scans of the step indexes stay cheap.
  await db.pool.query(
    `INSERT INTO emails (id, project_id, contact_id, to_email, from_email, subject, html, text, type, message_id,
       status, sent_at, delivered_at, first_opened_at, first_clicked_at, bounced_at)
     SELECT gen_random_uuid(), $1, gen_random_uuid(), 'a@b.co', 'x@y.co', 's', '', '', 'TRANSACTIONAL', '<m@y.co>',
       'sent', t, t, t, t, t
     FROM generate_series(1, 20000) AS i, LATERAL (SELECT CASE WHEN i % 2 = 0
       THEN timestamptz '2025-01-01' + i * interval '20 minutes' END AS t) AS at`,
    [PROJECT],
  );
  await db.pool.query('ANALYZE emails');
  const range = timeseriesRange({ from: '2026-01-01', to: '2026-01-03' });
  const explain = { query: (sql: string, params: unknown[]) => db.pool.query(`EXPLAIN ${sql}`, params) };
  const plan = await new TimeseriesStore(explain as never).buckets(PROJECT, range);
  const text = (plan as unknown as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
  for (const step of ['sent', 'delivered', 'opened', 'clicked', 'bounced'])
    expect(text).toMatch(new RegExp(`Index (Only )?Scan using emails_project_${step} on emails`));
});
