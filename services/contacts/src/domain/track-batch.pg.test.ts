import { randomUUID } from 'node:crypto';
import { readBusMessage } from '@svc/lib/bus-topic';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { ContactBatches, ContactsStore } from '../store/contacts-store.js';
import { EventsStore } from '../store/events-store.js';
import { FieldsStore } from '../store/fields-store.js';
import { migrations } from '../store/migrations.js';
import { Contacts } from './contacts.js';
import { Events } from './events.js';

// Tracks submitted together are written as one batch (writeTrackBatch) and published in batch messages: one
// contacts.created_batch and one events.tracked_batch per project, not a contacts.created and an events.tracked each.

let db: TestDatabase;
let events: Events;

beforeAll(async () => {
  db = await createTestDatabase('contacts_track_batch', migrations);
  const store = new EventsStore(db.pool);
  const contacts = new Contacts(db.pool, new ContactsStore(db.pool), store, new FieldsStore(db.pool));
  events = new Events(contacts, store, new ContactBatches(db.pool));
});

afterAll(() => db.drop());

const lastOutboxId = async () =>
  Number((await db.pool.query('SELECT coalesce(max(id), 0) AS n FROM outbox')).rows[0].n);

const outboxAfter = async (after: number) =>
  (await db.pool.query('SELECT subject, payload FROM outbox WHERE id > $1 ORDER BY id', [after])).rows as Array<{
    subject: string;
    payload: any;
  }>;

test('tracks of several projects in one batch: per project, one message of new contacts, one of events', async () => {
  const [p1, p2] = [randomUUID(), randomUUID()];
  await db.pool.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, 'old@example.com', false, '{}')`,
    [randomUUID(), p1],
  );
  const before = await lastOutboxId();
  const tracks = [
    { projectId: p1, email: 'a@example.com', event: 'signed-up', data: { plan: 'pro' } },
    { projectId: p2, email: 'b@example.com', event: 'signed-up', data: {} },
    { projectId: p1, email: 'a@example.com', event: 'page.viewed', data: {} },
    { projectId: p1, email: 'old@example.com', event: 'came-back', data: {}, subscribed: true },
    { projectId: p2, email: 'd@example.com', event: 'page.viewed', data: {} },
  ];
  // Submitted in one tick: one group commit takes them all.
  const answers = await Promise.all(tracks.map((t) => events.track(t)));
  const messages = await outboxAfter(before);
  // New contacts first, then changed ones, then the events (the projects in the batch's lock order).
  expect(messages.map((m) => m.subject)).toEqual([
    'contacts.created_batch',
    'contacts.created_batch',
    'contacts.updated',
    'events.tracked_batch',
    'events.tracked_batch',
  ]);
  const of = (subject: string, projectId: string) => {
    const found = messages.filter((m) => m.subject === subject && m.payload.projectId === projectId);
    expect(found).toHaveLength(1);
    return found[0].payload;
  };
  const created = (p: string) => readBusMessage(CONTACTS_TOPICS.createdBatch, of('contacts.created_batch', p));
  const batch = (p: string) => readBusMessage(CONTACTS_TOPICS.eventsTrackedBatch, of('events.tracked_batch', p));
  expect(created(p1).contacts.map((c) => c.email)).toEqual(['a@example.com']);
  expect(created(p2).contacts.map((c) => c.email)).toEqual(['b@example.com', 'd@example.com']);
  expect(of('contacts.updated', p1).contact).toMatchObject({ email: 'old@example.com', subscribed: true });
  // Every event of the project, the contact.subscribed its resubscribe caused too, as events.tracked carried each.
  expect(batch(p1).events.map((e) => [e.name, e.projectId])).toEqual([
    ['signed-up', p1],
    ['page.viewed', p1],
    ['contact.subscribed', p1],
    ['came-back', p1],
  ]);
  expect(batch(p2).events.map((e) => e.name)).toEqual(['signed-up', 'page.viewed']);
  const ids = [...batch(p1).events, ...batch(p2).events].map((e) => e.eventId);
  for (const a of answers) expect(ids).toContain(a.event.id);
  expect(batch(p1).events[0]).toMatchObject({ contactId: answers[0].contactId, data: { plan: 'pro' } });
});

test('a track written alone still publishes its contacts.created and events.tracked', async () => {
  const before = await lastOutboxId();
  const project = randomUUID();
  const answer = await events.track({ projectId: project, email: 'alone@example.com', event: 'signed-up', data: {} });
  const messages = await outboxAfter(before);
  expect(messages.map((m) => m.subject)).toEqual(['contacts.created', 'events.tracked']);
  expect(messages[1].payload).toMatchObject({ projectId: project, eventId: answer.event.id, name: 'signed-up' });
});
