import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { readBusMessage } from '@svc/lib/bus-topic';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { EmailLifecycleSchema, EmailsSentSchema } from '@svc/proto/svc/messaging/v1/events_pb';
import { ContactBatches, ContactsStore } from '../store/contacts-store.js';
import { EMAIL_EVENTS_PER_MESSAGE, EventsStore } from '../store/events-store.js';
import { FieldsStore } from '../store/fields-store.js';
import { migrations } from '../store/migrations.js';
import { eventTracked } from './bus-messages.js';
import { Contacts } from './contacts.js';
import { Events } from './events.js';

// The email lifecycle consumer against a real PostgreSQL: messages handled at once share one write.

let db: TestDatabase;
let events: Events;
let contacts: Contacts;

beforeAll(async () => {
  db = await createTestDatabase('contacts_email_activity', migrations);
  const eventsStore = new EventsStore(db.pool);
  contacts = new Contacts(db.pool, new ContactsStore(db.pool), eventsStore, new FieldsStore(db.pool));
  events = new Events(contacts, eventsStore, new ContactBatches(db.pool));
});

afterAll(() => db.drop());

const lifecycle = (projectId: string, contactId: string, type: string, extra: { test?: boolean } = {}) =>
  create(EmailLifecycleSchema, {
    projectId,
    contactId,
    emailId: randomUUID(),
    type,
    occurredAt: timestampFromDate(new Date()),
    data: { email: 'x@example.com' },
    ...extra,
  });

async function newContact(projectId: string, email: string): Promise<string> {
  const { rows } = await db.pool.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, $3, true, '{}') RETURNING id`,
    [randomUUID(), projectId, email],
  );
  return rows[0].id as string;
}

async function lastOutboxId(): Promise<number> {
  return Number((await db.pool.query('SELECT coalesce(max(id), 0) AS n FROM outbox')).rows[0].n);
}

async function rowsOf(contactId: string) {
  const ev = await db.pool.query('SELECT name, data FROM events WHERE contact_id = $1 ORDER BY name', [contactId]);
  const act = await db.pool.query('SELECT type FROM email_activity WHERE contact_id = $1 ORDER BY type', [contactId]);
  return { events: ev.rows, activity: act.rows.map((r) => r.type) };
}

test('a batch records each message once, skips test mail and deleted contacts, writes outbox messages', async () => {
  const project = randomUUID();
  const [a, gone] = await Promise.all(
    ['a@example.com', 'gone@example.com'].map(async (email) => {
      const { rows } = await db.pool.query(
        `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, $3, true, '{}') RETURNING id`,
        [randomUUID(), project, email],
      );
      return rows[0].id as string;
    }),
  );
  await db.pool.query('DELETE FROM contacts WHERE id = $1', [gone]);
  const sent = lifecycle(project, a, 'sent');
  const open = lifecycle(project, a, 'open');
  const outboxBefore = await lastOutboxId();
  // Submitted together: one group commit takes them all.
  await Promise.all([
    events.recordEmailActivity('m-1', sent),
    events.recordEmailActivity('m-1', sent), // a redelivery arriving with the original
    events.recordEmailActivity('m-2', open),
    events.recordEmailActivity('m-3', lifecycle(project, a, 'click', { test: true })),
    events.recordEmailActivity('m-4', lifecycle(project, gone, 'sent')),
  ]);
  await events.recordEmailActivity('m-2', open); // redelivered later
  const got = await rowsOf(a);
  expect(got.activity).toEqual(['open', 'sent']);
  expect(got.events.map((e) => e.name)).toEqual(['email.open', 'email.sent']);
  expect(got.events.find((e) => e.name === 'email.sent').data).toMatchObject({ emailId: sent.emailId });
  expect(await rowsOf(gone)).toEqual({ events: [], activity: [] });
  // The events go out as events.emails, many per message: each payload built in SQL is the one eventTracked builds
  // from the events row.
  const { rows: written } = await db.pool.query('SELECT * FROM events WHERE contact_id = $1 ORDER BY name', [a]);
  const published = await emailEventsSince(outboxBefore);
  expect(published.sort((x, y) => String(x.name).localeCompare(String(y.name)))).toEqual(
    written.map((e) => eventTracked(e).payload),
  );
});

/** The events of the `events.emails` outbox rows after row `after`, in order, each message read by its schema. */
async function emailEventsSince(after: number): Promise<Array<Record<string, unknown>>> {
  const { rows } = await db.pool.query(`SELECT subject, payload FROM outbox WHERE id > $1 ORDER BY id`, [after]);
  for (const r of rows) {
    expect(r.subject).toBe('events.emails');
    expect(readBusMessage(CONTACTS_TOPICS.emailEventsTracked, r.payload).projectId).toBe(r.payload.projectId);
  }
  return rows.flatMap((r) => r.payload.events);
}

test('a deliveries.emails_sent message records each of its emails as an emails.sent would, once', async () => {
  const project = randomUUID();
  const [a, b, gone] = await Promise.all(['a', 'b', 'gone'].map((n) => newContact(project, `${n}@example.com`)));
  await db.pool.query('DELETE FROM contacts WHERE id = $1', [gone]);
  const batch = create(EmailsSentSchema, {
    projectId: project,
    emails: [
      lifecycle(project, a, 'sent'),
      lifecycle(project, b, 'sent'),
      lifecycle(project, b, 'sent', { test: true }),
      lifecycle(project, gone, 'sent'),
    ],
  });
  const processedBefore = Number((await db.pool.query('SELECT count(*) AS n FROM processed_messages')).rows[0].n);
  const outboxBefore = await lastOutboxId();
  await Promise.all([
    events.recordEmailsSent('batch-1', batch),
    events.recordEmailsSent('batch-1', batch), // a redelivery arriving with the original
    events.recordEmailActivity('m-10', lifecycle(project, a, 'open')),
  ]);
  await events.recordEmailsSent('batch-1', batch); // redelivered later
  const [gotA, gotB] = [await rowsOf(a), await rowsOf(b)];
  expect(gotA.activity).toEqual(['open', 'sent']);
  expect(gotB.activity).toEqual(['sent']);
  expect(gotB.events.map((e) => e.name)).toEqual(['email.sent']);
  expect(gotB.events[0].data).toMatchObject({ emailId: batch.emails[1].emailId, email: 'x@example.com' });
  expect(await rowsOf(gone)).toEqual({ events: [], activity: [] });
  // One processed row per bus message, whatever its number of emails.
  const processedAfter = Number((await db.pool.query('SELECT count(*) AS n FROM processed_messages')).rows[0].n);
  expect(processedAfter - processedBefore).toBe(2);
  const published = (await emailEventsSince(outboxBefore)).filter((e) => e.name === 'email.sent');
  expect(published.map((e) => e.contactId)).toEqual([a, b]);
});

test('events.emails: one message per project and EMAIL_EVENTS_PER_MESSAGE events, in order', async () => {
  const project = randomUUID();
  const ids = await Promise.all(
    Array.from({ length: EMAIL_EVENTS_PER_MESSAGE + 1 }, (_, i) => newContact(project, `p${i}@example.com`)),
  );
  const outboxBefore = await lastOutboxId();
  const batch = create(EmailsSentSchema, {
    projectId: project,
    emails: ids.map((id) => lifecycle(project, id, 'sent')),
  });
  await events.recordEmailsSent('batch-chunks', batch);
  const { rows } = await db.pool.query(`SELECT payload FROM outbox WHERE id > $1 ORDER BY id`, [outboxBefore]);
  expect(rows.map((r) => r.payload.events.length)).toEqual([EMAIL_EVENTS_PER_MESSAGE, 1]);
  expect(rows.flatMap((r) => r.payload.events.map((e: { contactId: string }) => e.contactId))).toEqual(ids);
});
