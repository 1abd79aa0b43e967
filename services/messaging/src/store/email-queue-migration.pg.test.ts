import { randomUUID } from 'node:crypto';
import { migrate } from '@svc/lib/migrate';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { EmailsStore } from './emails-store.js';
import { migrations } from './migrations.js';

// Migration 012 moves the send queue out of emails: what was waiting (queued, a retry, an old-style lease) is
// due in email_queue afterwards, and mail sent before it still counts in the sent timeseries.

const PROJECT = randomUUID();
const at = migrations.findIndex((m) => m.id === '012_email_queue');

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase('messaging_queue_migration', migrations.slice(0, at));
});

afterAll(() => db.drop());

test('queued, deferred and leased emails enter email_queue; sent ones get their sent attempt', async () => {
  const insert = (status: string, extra = '') =>
    db.pool.query<{ id: string }>(
      `INSERT INTO emails (id, project_id, contact_id, to_email, from_email, subject, html, text, type, message_id,
         status, priority, next_attempt_at${extra ? ', sent_at, attempts' : ''})
       VALUES (gen_random_uuid(), $1, gen_random_uuid(), 'a@b.co', 'x@y.co', $2, '', '', 'MARKETING', '<m@y.co>',
         $2, 2, now() - interval '1 minute'${extra}) RETURNING id`,
      [PROJECT, status],
    );
  const queued = (await insert('queued')).rows[0].id;
  const leased = (await insert('sending')).rows[0].id;
  const sent = (await insert('sent', `, timestamptz '2026-01-01T09:00:00Z', 1`)).rows[0].id;
  await insert('suppressed');

  await migrate(db.pool, migrations);

  const { rows } = await db.pool.query('SELECT email_id FROM email_queue ORDER BY email_id');
  expect(rows.map((r) => r.email_id)).toEqual([queued, leased].sort());
  const claimed = await new EmailsStore(db.pool).lockDue(db.pool, 10);
  expect(new Set(claimed.map((r) => [r.id, r.status].join()))).toEqual(
    new Set([`${queued},queued`, `${leased},queued`]),
  );
  const attempts = await db.pool.query(
    `SELECT email_id, outcome, at, project_id FROM email_attempts WHERE project_id IS NOT NULL`,
  );
  expect(attempts.rows).toEqual([
    { email_id: sent, outcome: 'sent', at: new Date('2026-01-01T09:00:00Z'), project_id: PROJECT },
  ]);
});
