import { randomUUID } from 'node:crypto';
import type { Pool } from '@svc/lib/db';
import { DueWorkLoop } from '@svc/lib/due-work';
import { createLogger } from '@svc/lib/logger';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { SEND_PRIORITY, type SendSource } from '../domain/priority.js';
import { EmailsStore, type NewEmail } from './emails-store.js';
import { migrations } from './migrations.js';

// The send queue's claim order, on a real PostgreSQL with the service's own migrations.

const PROJECT = randomUUID();

let db: TestDatabase;
let pool: Pool;
let store: EmailsStore;

function email(source: SendSource, n: number): NewEmail {
  const id = randomUUID();
  return {
    id,
    project_id: PROJECT,
    contact_id: randomUUID(),
    to_email: `${source}-${n}@example.com`,
    to_name: '',
    from_email: 'hi@example.com',
    from_name: '',
    reply_to: '',
    subject: source,
    html: '<p>x</p>',
    text: 'x',
    headers: {},
    attachments: [],
    template_id: null,
    type: source === 'transactional' ? 'TRANSACTIONAL' : 'MARKETING',
    message_id: `<${id}@example.com>`,
    priority: SEND_PRIORITY[source],
    status: 'queued',
  };
}

async function queue(emails: NewEmail[]): Promise<void> {
  const client = await pool.connect();
  try {
    await store.insertMany(client, emails);
  } finally {
    client.release();
  }
}

beforeAll(async () => {
  db = await createTestDatabase('messaging_priority', migrations);
  pool = db.pool;
  store = new EmailsStore(pool);
});

afterAll(() => db.drop());

beforeEach(async () => {
  await pool.query('DELETE FROM emails');
});

test('a transactional message queued behind a 5,000-message campaign is claimed first', async () => {
  await queue(Array.from({ length: 5000 }, (_, i) => email('campaign', i)));
  await queue([email('workflow', 0)]);
  await queue([email('transactional', 0)]);

  const first = await store.claimDue(3, 60);
  expect(first.map((r) => r.subject)).toEqual(['transactional', 'workflow', 'campaign']);
});

test('the due-work loop delivers by priority while a campaign backlog drains', async () => {
  await queue(Array.from({ length: 300 }, (_, i) => email('campaign', i)));
  const order: string[] = [];
  const loop = new DueWorkLoop({
    name: 'test-delivery',
    logger: createLogger('silent'),
    claim: (limit) => store.claimDue(limit, 60),
    run: async (rows) => {
      for (const r of rows) order.push(r.subject);
      // The first campaign batch is in flight when the password reset arrives.
      if (order.length === 50) await queue([email('transactional', 1)]);
      await pool.query(`UPDATE emails SET status = 'sent' WHERE id = ANY($1::uuid[])`, [rows.map((r) => r.id)]);
    },
    batchSize: 50,
    pollMs: 50,
    notify: { pool, channel: 'emails_queued' },
  });
  await loop.start();
  const deadline = Date.now() + 15_000;
  while (order.length < 301 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await loop.stop();

  expect(order).toHaveLength(301);
  // Claimed in the very next batch, ahead of the 250 campaign messages still waiting.
  expect(order.indexOf('transactional')).toBe(50);
});

test('a lease that expires puts the message back in the queue', async () => {
  await queue([email('transactional', 2)]);
  const [claimed] = await store.claimDue(10, 60);
  expect(await store.claimDue(10, 60)).toEqual([]);
  await pool.query(`UPDATE emails SET locked_until = now() - interval '1 second' WHERE id = $1`, [claimed.id]);
  expect(await store.requeueExpiredLeases()).toBe(1);
  const [again] = await store.claimDue(10, 60);
  expect(again.id).toBe(claimed.id);
  expect(again.attempts).toBe(2);
});

test('lockDue: the lock is the lease (by priority, skipped by others, due again after a rollback)', async () => {
  await queue([email('campaign', 9), email('transactional', 9)]);
  const a = await pool.connect();
  const b = await pool.connect();
  try {
    await a.query('BEGIN');
    const [first] = await store.lockDue(a, 1);
    expect(first).toMatchObject({ subject: 'transactional', status: 'queued', attempts: 1 });
    await b.query('BEGIN');
    expect((await store.lockDue(b, 10)).map((r) => r.subject)).toEqual(['campaign']);
    await b.query('ROLLBACK');
    // The worker's transaction ends without an outcome (it died): the row is due again, not yet an attempt.
    await a.query('ROLLBACK');
    await a.query('BEGIN');
    const again = await store.lockDue(a, 10);
    expect(again.map((r) => [r.subject, r.attempts])).toEqual([
      ['transactional', 1],
      ['campaign', 1],
    ]);
    await store.recordOutcomes(
      a,
      { sent: [{ id: again[0].id, response: '250 ok' }], retry: [], bounced: [], failed: [] },
      true,
    );
    await store.postpone(a, [again[1].id], 60_000);
    await a.query('COMMIT');
    const { rows } = await pool.query(
      `SELECT subject, status, attempts, next_attempt_at > now() AS later FROM emails ORDER BY subject`,
    );
    expect(rows).toEqual([
      { subject: 'campaign', status: 'queued', attempts: 0, later: true },
      { subject: 'transactional', status: 'sent', attempts: 1, later: false },
    ]);
    expect(await store.attempts(again[0].id)).toMatchObject([{ attempt: 1, outcome: 'sent', smtp_code: 250 }]);
  } finally {
    a.release();
    b.release();
  }
});

test('a dedupe key is inserted once per project: repeats (same call, later call) are skipped, not errors', async () => {
  const keyed = (n: number, key: string) => ({ ...email('campaign', n), dedupe_key: key });
  const first = keyed(1, 'campaign:c1:contact-1');
  const other = keyed(3, 'campaign:c1:contact-2');
  const plain = email('transactional', 4);
  expect(await store.insertMany(pool, [first, keyed(2, 'campaign:c1:contact-1'), other, plain])).toEqual(
    new Set([first.id, other.id, plain.id]),
  );
  expect(await store.insertMany(pool, [keyed(5, 'campaign:c1:contact-1'), email('transactional', 6)])).toHaveProperty(
    'size',
    1,
  );
  // Another project may use the same key.
  expect(
    (await store.insertMany(pool, [{ ...keyed(7, 'campaign:c1:contact-1'), project_id: randomUUID() }])).size,
  ).toBe(1);
  expect(await store.byDedupeKeys(PROJECT, ['campaign:c1:contact-1', 'campaign:c1:contact-2', 'nope'])).toEqual(
    new Map([
      ['campaign:c1:contact-1', first.id],
      ['campaign:c1:contact-2', other.id],
    ]),
  );
  const { rows } = await pool.query('SELECT test FROM emails WHERE id = $1', [first.id]);
  expect(rows).toEqual([{ test: false }]);
});
