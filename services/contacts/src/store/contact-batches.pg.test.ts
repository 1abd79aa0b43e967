import { randomUUID } from 'node:crypto';
import { readBusMessage } from '@svc/lib/bus-topic';
import { withTransaction } from '@svc/lib/db';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { uuidv7 } from '@svc/lib/ids';
import { contactCreated, contactUpdated, eventTracked, eventTrackedTopic } from '../domain/bus-messages.js';
import type { ContactRow, EventRow } from './contact-rows.js';
import { ContactBatches, contactChangedJson, IMPORTED_PER_MESSAGE, importLines } from './contacts-store.js';
import { migrations } from './migrations.js';

// The import's set-based insert writes the new contacts and their contacts.imported messages (ids, a
// bounded number per message) in one statement. The batch of tracks builds its outbox payloads in SQL: they
// must stay the ones bus-messages.ts builds from the same rows (the proto3 JSON of ContactChanged, EventTracked).

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

const subjects = { created: CONTACTS_TOPICS.created.subject, updated: CONTACTS_TOPICS.updated.subject };

test('writeTracks writes contacts, events and the payloads bus-messages.ts builds, in the order given', async () => {
  const project = randomUUID();
  const old = (
    await db.pool.query<ContactRow>(
      `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, 'Old@Example.com', false, '{}')
       RETURNING *`,
      [randomUUID(), project],
    )
  ).rows[0];
  const fresh = randomUUID();
  const data = { name: 'Ada "the first" \\ Lovelace', big: 9007199254740991, nested: { note: 'ünïcödé 🚀' } };
  const events = [
    { id: uuidv7(), projectId: project, contactId: fresh, name: 'signed-up', data, context: { requestId: 'req-a' } },
    { id: uuidv7(), projectId: project, contactId: old.id, name: 'contact.subscribed', data: {} },
    { id: uuidv7(), projectId: project, contactId: old.id, name: 'page.viewed', data: { '': 1, list: [1, 'x'] } },
    { id: uuidv7(), projectId: project, contactId: old.id, name: 'email.open', data: { emailId: 'e-1' } },
  ].map((e) => ({ ...e, subject: eventTrackedTopic(e.name).subject }));
  const at = await withTransaction(db.pool, async (tx) => {
    await tx.query('DELETE FROM outbox');
    return batches.writeTracks(
      tx,
      {
        contacts: [
          { id: fresh, projectId: project, email: 'Ada@Example.com', subscribed: true, data, isNew: true },
          {
            id: old.id,
            projectId: project,
            email: old.email,
            subscribed: true,
            data: { plan: 'pro' },
            isNew: false,
            context: { requestId: 'req-b', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
          },
        ],
        events,
      },
      subjects,
    );
  });
  const contacts = await db.pool.query<ContactRow>('SELECT * FROM contacts WHERE project_id = $1', [project]);
  const byId = new Map(contacts.rows.map((c) => [c.id, c]));
  expect(byId.get(old.id)).toMatchObject({ subscribed: true, data: { plan: 'pro' } });
  expect(byId.get(fresh)).toMatchObject({ email: 'Ada@Example.com', subscribed: true, data });
  const stored = await db.pool.query<EventRow>('SELECT * FROM events WHERE project_id = $1', [project]);
  expect(stored.rows.map((e) => e.created_at)).toEqual(events.map(() => at));
  const eventRow = (id: string) => stored.rows.find((e) => e.id === id)!;
  const messages = await db.pool.query('SELECT subject, payload, request_id, traceparent FROM outbox ORDER BY id');
  const meta = (requestId: string | null, traceparent: string | null = null) => ({
    request_id: requestId,
    traceparent,
  });
  expect(messages.rows).toEqual([
    { ...contactCreated(byId.get(fresh)!), ...meta(null) },
    {
      ...contactUpdated(byId.get(old.id)!),
      ...meta('req-b', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
    },
    { ...eventTracked(eventRow(events[0].id)), ...meta('req-a') },
    { ...eventTracked(eventRow(events[1].id)), ...meta(null) },
    { ...eventTracked(eventRow(events[2].id)), ...meta(null) },
    { ...eventTracked(eventRow(events[3].id)), ...meta(null) },
  ]);

  // A new contact whose email exists already fails the whole statement (the batch is retried one by one).
  await expect(
    withTransaction(db.pool, (tx) =>
      batches.writeTracks(
        tx,
        {
          contacts: [
            { id: randomUUID(), projectId: project, email: 'ADA@example.com', subscribed: true, data: {}, isNew: true },
          ],
          events: [],
        },
        subjects,
      ),
    ),
  ).rejects.toMatchObject({ code: '23505' });
});
