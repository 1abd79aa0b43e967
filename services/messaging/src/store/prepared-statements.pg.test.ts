import { randomUUID } from 'node:crypto';
import { enqueueMany } from '@svc/lib/outbox';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { uuidv7 } from '@svc/lib/ids';
import { ActivityStore } from './activity-store.js';
import { EmailsStore } from './emails-store.js';
import { migrations } from './migrations.js';
import { testEmail } from './test-emails.js';

// The batch statements prepared once per connection (named): a connection that has them keeps working when a
// migration of a newer replica changes their tables (PostgreSQL plans them again), and answers as before.

const PROJECT = randomUUID();
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase('messaging_prepared', migrations);
});

afterAll(() => db.drop());

test("a connection's prepared batch statements survive columns added to their tables", async () => {
  const emails = new EmailsStore(db.pool);
  const activity = new ActivityStore(db.pool);
  const client = await db.pool.connect();
  const batch = async (n: number) => {
    const queued = [testEmail(PROJECT, { dedupe_key: `k${n}` }), testEmail(PROJECT, { dedupe_key: 'k0' })];
    const inserted = await emails.insertMany(client, queued);
    const ids = await enqueueMany(client, [{ subject: 'deliveries.emails_sent', payload: { n } }]);
    await activity.insertMany(client, [
      {
        id: uuidv7(),
        source_id: `messaging-${ids[0]}/0`,
        project_id: PROJECT,
        type: 'email.sent',
        contact_id: null,
        email_id: queued[0].id,
        email: null,
        name: null,
        data: { n },
        occurred_at: new Date(),
      },
    ]);
    return { inserted: inserted.size, ids };
  };
  try {
    expect(await batch(0)).toEqual({ inserted: 1, ids: [expect.any(String)] });
    for (let n = 1; n <= 6; n++) await batch(n); // past the custom plans: a generic plan is kept from here
    await db.pool.query(`ALTER TABLE emails ADD COLUMN later text; ALTER TABLE activity ADD COLUMN later text;
      ALTER TABLE outbox ADD COLUMN later text`);
    // The duplicate key of each batch is still skipped; the new email and its rows are written.
    expect(await batch(7)).toEqual({ inserted: 1, ids: [expect.any(String)] });
    expect(await emails.byDedupeKeys(PROJECT, ['k0', 'k7', 'none'])).toEqual(
      new Map([
        ['k0', expect.any(String)],
        ['k7', expect.any(String)],
      ]),
    );
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM activity');
    expect(rows[0].n).toBe(8);
  } finally {
    client.release();
  }
});
