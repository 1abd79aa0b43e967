import { randomUUID } from 'node:crypto';
import { readBusMessage } from '@svc/lib/bus-topic';
import { withTransaction } from '@svc/lib/db';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { uuidv7 } from '@svc/lib/ids';
import { contactCreated, contactUpdated, eventTracked } from '../domain/bus-messages.js';
import type { ContactRow, EventRow } from './contact-rows.js';
import {
  ContactBatches,
  contactChangedJson,
  IMPORTED_PER_MESSAGE,
  importLines,
  TRACK_BYTES_PER_MESSAGE,
  TRACK_ITEMS_PER_MESSAGE,
} from './contacts-store.js';
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

const subjects = {
  createdBatch: CONTACTS_TOPICS.createdBatch.subject,
  updated: CONTACTS_TOPICS.updated.subject,
  eventsBatch: CONTACTS_TOPICS.eventsTrackedBatch.subject,
};

test('writeTracks writes contacts, events and the payloads bus-messages.ts builds, in batches, in order', async () => {
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
  ];
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
  // Each item of a batch message is what its single message (contacts.created, events.tracked) carried.
  const created = contactCreated(byId.get(fresh)!).payload as { contact: unknown };
  expect(messages.rows).toEqual([
    { subject: 'contacts.created_batch', payload: { projectId: project, contacts: [created.contact] }, ...meta(null) },
    {
      ...contactUpdated(byId.get(old.id)!),
      ...meta('req-b', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
    },
    {
      subject: 'events.tracked_batch',
      payload: { projectId: project, events: events.map((e) => eventTracked(eventRow(e.id)).payload) },
      ...meta('req-a'),
    },
  ]);
  // And each reads as its topic's message.
  expect(readBusMessage(CONTACTS_TOPICS.createdBatch, messages.rows[0].payload).contacts[0].id).toBe(fresh);
  expect(readBusMessage(CONTACTS_TOPICS.eventsTrackedBatch, messages.rows[2].payload).events.length).toBe(3);

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

test("writeTracks: one message per project of a batch's new contacts and of its events, in order", async () => {
  const [p1, p2] = [randomUUID(), randomUUID()];
  const contacts = [p1, p2, p1, p2, p1].map((projectId, n) => ({
    id: randomUUID(),
    projectId,
    email: `c${n}@example.com`,
    subscribed: true,
    data: { n },
    isNew: true,
    context: { requestId: `req-${n}` },
  }));
  const events = contacts.flatMap((c, n) =>
    ['first', 'second'].map((name) => ({ id: uuidv7(), projectId: c.projectId, contactId: c.id, name, data: { n } })),
  );
  await withTransaction(db.pool, async (tx) => {
    await tx.query('DELETE FROM outbox');
    await batches.writeTracks(tx, { contacts, events }, subjects);
  });
  const { rows } = await db.pool.query('SELECT subject, payload, request_id FROM outbox ORDER BY id');
  const ofProject = (p: string) => contacts.filter((c) => c.projectId === p);
  expect(rows.map((r) => [r.subject, r.payload.projectId, r.request_id])).toEqual([
    ['contacts.created_batch', p1, 'req-0'],
    ['contacts.created_batch', p2, 'req-1'],
    ['events.tracked_batch', p1, null],
    ['events.tracked_batch', p2, null],
  ]);
  expect(rows[0].payload.contacts.map((c: { id: string }) => c.id)).toEqual(ofProject(p1).map((c) => c.id));
  expect(rows[1].payload.contacts.map((c: { id: string }) => c.id)).toEqual(ofProject(p2).map((c) => c.id));
  const eventIds = (p: string) => events.filter((e) => e.projectId === p).map((e) => e.id);
  expect(rows[2].payload.events.map((e: { eventId: string }) => e.eventId)).toEqual(eventIds(p1));
  expect(rows[3].payload.events.map((e: { eventId: string }) => e.eventId)).toEqual(eventIds(p2));
});

test('writeTracks: a batch message holds TRACK_ITEMS_PER_MESSAGE items and about TRACK_BYTES_PER_MESSAGE', async () => {
  const project = randomUUID();
  const contact = randomUUID();
  await db.pool.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, 'x@y.z', true, '{}')`,
    [contact, project],
  );
  const event = (data: object) => ({ id: uuidv7(), projectId: project, contactId: contact, name: 'e', data });
  // Small events: cut by count.
  const small = Array.from({ length: TRACK_ITEMS_PER_MESSAGE + 1 }, () => event({}));
  // Events of 60 KB (data may hold 64 KB): cut by bytes, each message far below NATS's 1 MB.
  const big = Array.from({ length: 12 }, () => event({ text: 'x'.repeat(60_000) }));
  const sizes = async (events: ReturnType<typeof event>[]) => {
    await withTransaction(db.pool, async (tx) => {
      await tx.query('DELETE FROM outbox');
      await batches.writeTracks(tx, { contacts: [], events }, subjects);
    });
    const { rows } = await db.pool.query(
      'SELECT payload, octet_length(payload::text) AS bytes FROM outbox ORDER BY id',
    );
    expect(rows.flatMap((r) => r.payload.events.map((e: { eventId: string }) => e.eventId))).toEqual(
      events.map((e) => e.id),
    );
    return rows.map((r) => ({ events: r.payload.events.length, bytes: r.bytes as number }));
  };
  expect((await sizes(small)).map((m) => m.events)).toEqual([TRACK_ITEMS_PER_MESSAGE, 1]);
  const bigMessages = await sizes(big);
  expect(bigMessages.length).toBeGreaterThan(1);
  for (const m of bigMessages) expect(m.bytes).toBeLessThan(TRACK_BYTES_PER_MESSAGE + 70_000);
});
