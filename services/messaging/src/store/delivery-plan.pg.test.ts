import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from '@svc/lib/db';
import { createTestDatabase, explainedPlans, type TestDatabase } from '@svc/lib/test-database';
import { DELIVERY_PLAN_SETTINGS, EmailsStore, type NewEmail } from './emails-store.js';
import { migrations } from './migrations.js';

// A campaign's statements on a table the planner has no statistics of (never analysed, as a new database is): a
// delivery batch under DELIVERY_PLAN_SETTINGS locks its rows walking emails_due in claim order and records outcomes by
// primary key, however many sent emails left dead entries in emails_due; the dedupe lookup probes emails_dedupe.
// Plans come from auto_explain, as notices.

const PROJECT = randomUUID();

let db: TestDatabase;
let pool: Pool;
let store: EmailsStore;

function email(n: number): NewEmail {
  const id = randomUUID();
  return {
    id,
    project_id: PROJECT,
    contact_id: randomUUID(),
    to_email: `reader${n}@example.com`,
    to_name: '',
    from_email: 'news@example.com',
    from_name: '',
    reply_to: '',
    subject: `news ${n}`,
    html: '<p>news</p>',
    text: 'news',
    headers: {},
    template_id: null,
    type: 'MARKETING',
    message_id: `<${id}@example.com>`,
    priority: 2,
    status: 'queued',
  };
}

/** One delivery batch as the worker writes it: lock, every email sent, commit. Answers the batch's ids. */
async function deliverBatch(tx: PoolClient, settings: string, limit: number): Promise<string[]> {
  await tx.query(`BEGIN; ${settings}`);
  const rows = await store.lockDue(tx, limit);
  const sent = rows.map((r) => ({ id: r.id, response: '250 ok' }));
  await store.recordOutcomes(tx, { sent, retry: [], bounced: [], failed: [] }, true);
  await tx.query('COMMIT');
  return rows.map((r) => r.id);
}

beforeAll(async () => {
  db = await createTestDatabase('messaging_delivery_plan', migrations);
  pool = db.pool;
  store = new EmailsStore(pool);
});

afterAll(() => db.drop());

test('a delivery batch locks through emails_due in order and records outcomes by primary key', async () => {
  await store.insertMany(
    pool,
    Array.from({ length: 4000 }, (_, n) => email(n)),
  );
  const tx = await pool.connect();
  try {
    // Half the queue sent: its emails_due entries are dead, still in the index (no vacuum).
    for (let i = 0; i < 20; i++) expect(await deliverBatch(tx, DELIVERY_PLAN_SETTINGS, 100)).toHaveLength(100);

    let batch: string[] = [];
    // The outcome's statement runs inside a function (store migration 013): its plan is a nested statement's.
    await tx.query("LOAD 'auto_explain'; SET auto_explain.log_nested_statements = on");
    const plans = await explainedPlans(tx, async () => (batch = await deliverBatch(tx, DELIVERY_PLAN_SETTINGS, 100)));
    expect(batch).toHaveLength(100);

    // The rows themselves, in claim order as emails_due yields them: no sort, no second visit by primary key.
    const lock = plans.find((p) => p.includes('LockRows'));
    expect(lock).toMatch(/Limit[\s\S]*LockRows[\s\S]*Index Scan using emails_due/);
    expect(lock).not.toMatch(/Bitmap|Sort|emails_pkey|Seq Scan/);
    const outcome = plans.find((p) => p.includes('Update on emails'));
    expect(outcome).toMatch(/Nested Loop[\s\S]*Index Scan using emails_pkey/);
    expect(outcome).not.toMatch(/Bitmap|Hash Join|Merge Join|Seq Scan on emails/);
  } finally {
    tx.release();
  }
  const { rows } = await pool.query(`SELECT status, count(*)::int AS n FROM emails GROUP BY status ORDER BY status`);
  expect(rows).toEqual([
    { status: 'queued', n: 1900 },
    { status: 'sent', n: 2100 },
  ]);
  // Each sent email's attempt, numbered and with the reply code of the server's answer.
  const attempts = await pool.query(
    `SELECT a.outcome, a.attempt, a.smtp_code, a.smtp_response, count(*)::int AS n
     FROM email_attempts a JOIN emails e ON e.id = a.email_id AND e.attempts = a.attempt
     GROUP BY 1, 2, 3, 4`,
  );
  expect(attempts.rows).toEqual([{ outcome: 'sent', attempt: 1, smtp_code: 250, smtp_response: '250 ok', n: 2100 }]);
});

test('the dedupe lookup of a batch probes emails_dedupe once per key, not every email of the project', async () => {
  const { rows } = await pool.query<{ id: string; dedupe_key: string }>(
    `UPDATE emails SET dedupe_key = 'campaign:c1:' || to_email WHERE to_email IN ('reader7@example.com',
       'reader3999@example.com') RETURNING id, dedupe_key`,
  );
  const client = await pool.connect();
  try {
    const lookup = new EmailsStore(client as unknown as Pool);
    let found = new Map<string, string>();
    // A campaign batch's 500 keys, most of them new.
    const keys = [...rows.map((r) => r.dedupe_key), ...Array.from({ length: 498 }, (_, n) => `campaign:c1:new${n}`)];
    const plans = await explainedPlans(client, async () => (found = await lookup.byDedupeKeys(PROJECT, keys)));
    expect(found).toEqual(new Map(rows.map((r) => [r.dedupe_key, r.id])));
    const plan = plans.find((p) => p.includes('emails'));
    expect(plan).toMatch(/Index Scan using emails_dedupe/);
    expect(plan).not.toMatch(/emails_project_created|Bitmap|Seq Scan on emails/);
  } finally {
    client.release();
  }
});
