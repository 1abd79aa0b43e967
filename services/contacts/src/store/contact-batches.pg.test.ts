import { randomUUID } from 'node:crypto';
import { withTransaction } from '@svc/lib/db';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { contactCreated } from '../domain/bus-messages.js';
import type { ContactRow } from './contact-rows.js';
import { ContactBatches, contactChangedJson } from './contacts-store.js';
import { migrations } from './migrations.js';

// The import's set-based insert builds contacts.created payloads in SQL: they must stay the ones
// bus-messages.ts builds from the same rows (the proto3 JSON of ContactChanged).

let db: TestDatabase;
let batches: ContactBatches;

beforeAll(async () => {
  db = await createTestDatabase('contacts_batches', migrations);
  batches = new ContactBatches(db.pool);
});

afterAll(() => db.drop());

const outbox = { subject: CONTACTS_TOPICS.created.subject, requestId: 'req-1', traceparent: null };

test('insertWithCreated writes each new contact and the contacts.created payload bus-messages.ts builds', async () => {
  const project = randomUUID();
  const rows: Array<[string, Record<string, unknown>]> = [
    [
      'Ada@Example.com',
      { name: 'Ada "the first" \\ Lovelace', age: 36, score: 46.3, vip: true, big: 9007199254740991 },
    ],
    ['grace@example.com', { profile: { tier: 'gold', since: '2020-01-02' }, note: 'ünïcödé 🚀', '': 'empty key' }],
    ['plain@example.com', {}],
  ];
  const inserted = await withTransaction(db.pool, (tx) =>
    batches.insertWithCreated(tx, project, JSON.stringify(rows), outbox),
  );
  expect([...inserted]).toEqual(['ada@example.com', 'grace@example.com', 'plain@example.com']);
  const stored = await db.pool.query<ContactRow>('SELECT * FROM contacts WHERE project_id = $1', [project]);
  const messages = await db.pool.query<{
    subject: string;
    payload: { contact: { email: string } };
    request_id: string;
  }>('SELECT subject, payload, request_id FROM outbox ORDER BY id');
  expect(messages.rows.map((m) => m.payload.contact.email)).toEqual(rows.map(([email]) => email));
  for (const m of messages.rows) {
    const row = stored.rows.find((c) => c.email === m.payload.contact.email)!;
    expect(row.subscribed).toBe(true);
    expect(m).toEqual({ ...contactCreated(row), request_id: 'req-1' });
  }

  // An email stored meanwhile (another writer) is skipped, and so is its message.
  const again = await withTransaction(db.pool, (tx) =>
    batches.insertWithCreated(
      tx,
      project,
      JSON.stringify([
        ['ADA@example.com', {}],
        ['new@example.com', {}],
      ]),
      outbox,
    ),
  );
  expect([...again]).toEqual(['new@example.com']);
  expect((await db.pool.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n).toBe(4);
});

test('timestamps print as a proto3 Timestamp of a JS Date: milliseconds, truncated, no ".000"', async () => {
  const project = randomUUID();
  for (const at of ['2026-01-02 03:04:05+00', '2026-01-02 03:04:05.5+00', '2026-01-02 03:04:05.123999+00']) {
    const { rows } = await db.pool.query<ContactRow & { payload: unknown }>(
      `SELECT c.*, ${contactChangedJson('c')} AS payload FROM (
         SELECT $1::uuid AS id, $2::uuid AS project_id, 'a@example.com' AS email, false AS subscribed,
                '{"n": 1}'::jsonb AS data, $3::timestamptz AS created_at, $3::timestamptz AS updated_at) c`,
      [randomUUID(), project, at],
    );
    expect(rows[0].payload).toEqual(contactCreated(rows[0]).payload);
  }
});
