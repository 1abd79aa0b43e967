import { randomUUID } from 'node:crypto';
import { createTestDatabase, explainedPlans, type TestDatabase } from '@svc/lib/test-database';
import { uuidv7 } from '@svc/lib/ids';
import { ContactBatches, ContactsStore } from './contacts-store.js';
import { EventsStore } from './events-store.js';
import { migrations } from './migrations.js';

// A workflow's track path on a contacts table the planner has no statistics of (never analysed, as a new database
// is): a batch of tracks locks its contacts through contacts_project_email and a batch of email activity finds its
// contacts through contacts_pkey, one probe per key, not a read of every contact. Plans come from auto_explain,
// as notices.

const PROJECT = randomUUID();
const CONTACTS = 3000;

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase('contacts_track_plan', migrations);
  await db.pool.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data)
     SELECT gen_random_uuid(), $1, 'Reader' || n || '@example.com', true, '{}' FROM generate_series(1, $2) n`,
    [PROJECT, CONTACTS],
  );
});

afterAll(() => db.drop());

test('a batch of tracks locks its contacts by probing contacts_project_email per key', async () => {
  const keys = [
    ...Array.from({ length: 40 }, (_, n) => ({ projectId: PROJECT, email: `READER${CONTACTS - n * 7}@example.com` })),
    ...Array.from({ length: 10 }, (_, n) => ({ projectId: PROJECT, email: `new${n}@example.com` })),
  ];
  const client = await db.pool.connect();
  try {
    let emails: string[] = [];
    await client.query('BEGIN');
    const plans = await explainedPlans(client, async () => {
      emails = (await new ContactBatches(db.pool).lockByKeys(client, keys)).map((r) => r.email);
    });
    await client.query('COMMIT');
    const existing = keys.slice(0, 40).map((k) => k.email.replace('READER', 'Reader'));
    expect(emails.sort()).toEqual(existing.sort());
    const plan = plans.find((p) => p.includes('LockRows'));
    expect(plan).toMatch(/Index Scan using contacts_project_email/);
    expect(plan).not.toMatch(/Seq Scan on contacts|Bitmap|Hash Join/);
  } finally {
    client.release();
  }
});

test('a batch of email activity finds its contacts by primary key, not a read of every contact', async () => {
  const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM contacts ORDER BY email LIMIT 150');
  const writes = [...rows.map((r) => r.id), randomUUID()].map((contactId, n) => ({
    messageId: `m${n}`,
    item: 0,
    projectId: PROJECT,
    contactId,
    emailId: `e${n}`,
    type: 'sent',
    at: new Date(),
    eventId: uuidv7(),
    data: { emailId: `e${n}` },
  }));
  const client = await db.pool.connect();
  try {
    const plans = await explainedPlans(client, () =>
      new EventsStore(db.pool).writeEmailActivity(client, 'test', writes),
    );
    const plan = plans.find((p) => p.includes('Insert on email_activity'));
    expect(plan).toMatch(/Index Scan using contacts_pkey/);
    // Nor a nested loop of the batch against itself (what the planner chose when it thought a join gave one row).
    expect(plan).not.toMatch(/Seq Scan on contacts|Bitmap|Rows Removed by Join Filter/);
  } finally {
    client.release();
  }
  const { rows: written } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM email_activity WHERE project_id = $1`,
    [PROJECT],
  );
  expect(written).toEqual([{ n: 150 }]);
});

test('contacts by id (a workflow round fetching its contacts) probe contacts_pkey, not every contact', async () => {
  const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM contacts ORDER BY email DESC LIMIT 50');
  const ids = [...rows.map((r) => r.id), rows[0].id, randomUUID()];
  const store = new ContactsStore(db.pool);
  const client = await db.pool.connect();
  try {
    for (const read of [true, false]) {
      let found: string[] = [];
      await client.query('BEGIN');
      const plans = await explainedPlans(client, async () => {
        found = (await store.byIds(client, PROJECT, ids, read)).map((r) => r.id);
      });
      await client.query('COMMIT');
      expect(found.sort()).toEqual(rows.map((r) => r.id).sort());
      const plan = plans.find((p) => p.includes('contacts'));
      expect(plan).toMatch(/Index Scan using contacts_pkey/);
      expect(plan).not.toMatch(/contacts_project_created|Seq Scan on contacts|Bitmap/);
    }
  } finally {
    client.release();
  }
});
