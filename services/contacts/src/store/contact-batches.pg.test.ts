import { randomUUID } from 'node:crypto';
import { readBusMessage } from '@svc/lib/bus-topic';
import { withTransaction } from '@svc/lib/db';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { contactCreated } from '../domain/bus-messages.js';
import type { ContactRow } from './contact-rows.js';
import { ContactBatches, contactChangedJson, IMPORTED_PER_MESSAGE, importLines } from './contacts-store.js';
import { migrations } from './migrations.js';

// The import's set-based insert writes the new contacts and their contacts.imported messages (ids, a
// bounded number per message) in one statement.

let db: TestDatabase;
let batches: ContactBatches;

beforeAll(async () => {
  db = await createTestDatabase('contacts_batches', migrations);
  batches = new ContactBatches(db.pool);
});

afterAll(() => db.drop());

const outbox = { subject: CONTACTS_TOPICS.imported.subject, requestId: 'req-1', traceparent: null };

const lines = (rows: Array<[string, unknown]>) =>
  importLines(rows.map(([email, data]) => ({ email, json: JSON.stringify(data) })));

const messagesOf = async (project: string) => {
  const { rows } = await db.pool.query<{ subject: string; payload: unknown; request_id: string }>(
    "SELECT subject, payload, request_id FROM outbox WHERE payload->>'projectId' = $1 ORDER BY id",
    [project],
  );
  return rows.map((m) => ({ ...m, payload: readBusMessage(CONTACTS_TOPICS.imported, m.payload) }));
};

test('insertWithImported writes each new contact, subscribed, and a contacts.imported message of ids', async () => {
  const project = randomUUID();
  const rows: Array<[string, Record<string, unknown>]> = [
    [
      'Ada@Example.com',
      {
        name: 'Ada "the first" \\ Lovelace',
        lines: 'a\tb\nc\r\n',
        age: 36,
        score: 46.3,
        vip: true,
        big: 9007199254740991,
      },
    ],
    ['grace@example.com', { profile: { tier: 'gold', since: '2020-01-02' }, note: 'ünïcödé 🚀', '': 'empty key' }],
    ['plain@example.com', {}],
  ];
  const inserted = await withTransaction(db.pool, (tx) => batches.insertWithImported(tx, project, lines(rows), outbox));
  expect([...inserted].sort()).toEqual(['ada@example.com', 'grace@example.com', 'plain@example.com']);
  const stored = await db.pool.query<ContactRow>('SELECT * FROM contacts WHERE project_id = $1 ORDER BY email', [
    project,
  ]);
  expect(stored.rows.map((c) => [c.email, c.data, c.subscribed])).toEqual(
    rows.map(([email, data]) => [email, data, true]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
  const messages = await messagesOf(project);
  expect(messages).toHaveLength(1);
  expect(messages[0]).toMatchObject({ subject: 'contacts.imported', request_id: 'req-1' });
  expect(messages[0].payload.projectId).toBe(project);
  expect([...messages[0].payload.contactIds].sort()).toEqual(stored.rows.map((c) => c.id).sort());

  // An email stored meanwhile (another writer) is skipped, and so is its id.
  const again = await withTransaction(db.pool, (tx) =>
    batches.insertWithImported(
      tx,
      project,
      lines([
        ['ADA@example.com', {}],
        ['new@example.com', {}],
      ]),
      outbox,
    ),
  );
  expect([...again]).toEqual(['new@example.com']);
  const after = await messagesOf(project);
  expect(after).toHaveLength(2);
  const added = await db.pool.query<{ id: string }>(
    "SELECT id FROM contacts WHERE project_id = $1 AND email = 'new@example.com'",
    [project],
  );
  expect(after[1].payload.contactIds).toEqual([added.rows[0].id]);
});

test(`a batch's ids are split over messages of at most ${IMPORTED_PER_MESSAGE}, each contact named once`, async () => {
  const project = randomUUID();
  const count = 2 * IMPORTED_PER_MESSAGE + 1;
  const rows = Array.from({ length: count }, (_, i): [string, unknown] => [`c${i}@example.com`, { i }]);
  await withTransaction(db.pool, (tx) => batches.insertWithImported(tx, project, lines(rows), outbox));
  const messages = await messagesOf(project);
  expect(messages.map((m) => m.payload.contactIds.length)).toEqual([IMPORTED_PER_MESSAGE, IMPORTED_PER_MESSAGE, 1]);
  const ids = messages.flatMap((m) => m.payload.contactIds);
  const stored = await db.pool.query<{ id: string }>('SELECT id FROM contacts WHERE project_id = $1', [project]);
  expect(new Set(ids).size).toBe(count);
  expect([...ids].sort()).toEqual(stored.rows.map((r) => r.id).sort());
});

test('a batch whose every email exists writes no message', async () => {
  const project = randomUUID();
  const rows = lines([['only@example.com', {}]]);
  await withTransaction(db.pool, (tx) => batches.insertWithImported(tx, project, rows, outbox));
  const again = await withTransaction(db.pool, (tx) => batches.insertWithImported(tx, project, rows, outbox));
  expect(again.size).toBe(0);
  expect(await messagesOf(project)).toHaveLength(1);
});

test('contactChangedJson: timestamps print as proto3 Timestamps of a JS Date (milliseconds, no ".000")', async () => {
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
