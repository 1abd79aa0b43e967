import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { EmailsStore } from './emails-store.js';
import { migrations } from './migrations.js';
import { testEmail } from './test-emails.js';

// A provider's notification names our email by its id or by the Message-ID we set (`<id@sender domain>`), which
// findForNotification reads by primary key (migration 012 dropped the index on message_id).

let db: TestDatabase;
let store: EmailsStore;
const id = randomUUID();
const messageId = `<${id}@mail.example.com>`;

beforeAll(async () => {
  db = await createTestDatabase('messaging_notification_lookup', migrations);
  store = new EmailsStore(db.pool);
  const client = await db.pool.connect();
  try {
    await store.insertMany(client, [
      testEmail(randomUUID(), {
        id,
        to_email: 'to@example.com',
        from_email: 'hi@mail.example.com',
        message_id: messageId,
      }),
    ]);
  } finally {
    client.release();
  }
});

afterAll(() => db.drop());

test('a Message-ID we set finds its email, with or without angle brackets', async () => {
  expect((await store.findForNotification({ messageId }))?.id).toBe(id);
  expect((await store.findForNotification({ messageId: ` ${id}@mail.example.com ` }))?.id).toBe(id);
});

test('a Message-ID that differs from the one we set, or names no email id, finds nothing', async () => {
  expect(await store.findForNotification({ messageId: `<${id}@other.example.com>` })).toBeNull();
  expect(await store.findForNotification({ messageId: `<${randomUUID()}@mail.example.com>` })).toBeNull();
  expect(await store.findForNotification({ messageId: '<abc@mail.example.com>' })).toBeNull();
  expect(await store.findForNotification({ messageId: `<x${id}@mail.example.com>` })).toBeNull();
});

test('an unknown email id falls back to the Message-ID', async () => {
  expect((await store.findForNotification({ emailId: randomUUID(), messageId }))?.id).toBe(id);
});
