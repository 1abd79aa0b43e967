import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { EmailLifecycleSchema } from '@svc/proto/svc/messaging/v1/events_pb';
import { ContactBatches, ContactsStore } from '../store/contacts-store.js';
import { EventsStore } from '../store/events-store.js';
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
  const outboxBefore = Number((await db.pool.query('SELECT count(*) AS n FROM outbox')).rows[0].n);
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
  const outboxAfter = Number((await db.pool.query('SELECT count(*) AS n FROM outbox')).rows[0].n);
  expect(outboxAfter - outboxBefore).toBe(2);
  // The payloads built in SQL are the ones eventTracked builds from the events rows, on events.email.
  const { rows: written } = await db.pool.query('SELECT * FROM events WHERE contact_id = $1 ORDER BY name', [a]);
  const { rows: outbox } = await db.pool.query(
    `SELECT subject, payload FROM outbox WHERE payload->>'contactId' = $1 ORDER BY payload->>'name'`,
    [a],
  );
  expect(outbox).toEqual(written.map((e) => eventTracked(e)));
  expect(outbox.map((m) => m.subject)).toEqual(['events.email', 'events.email']);
});
