import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { ContactsStore } from '../store/contacts-store.js';
import { EventsStore } from '../store/events-store.js';
import { FieldsStore } from '../store/fields-store.js';
import { migrations } from '../store/migrations.js';
import { ContactUpserts } from './contact-upserts.js';
import { Contacts } from './contacts.js';
import { MAX_CUSTOM_FIELDS } from './fields.js';

// UpsertContacts against a real PostgreSQL with the service's own migrations.

let db: TestDatabase;
let upserts: ContactUpserts;

beforeAll(async () => {
  db = await createTestDatabase('contacts_upserts', migrations);
  const contacts = new Contacts(
    db.pool,
    new ContactsStore(db.pool),
    new EventsStore(db.pool),
    new FieldsStore(db.pool),
  );
  upserts = new ContactUpserts(db.pool, contacts);
});

afterAll(() => db.drop());

const errorOf = (r: Awaited<ReturnType<ContactUpserts['upsertMany']>>[number]) =>
  r.ok ? undefined : (r.error as { errors?: { field: string; code: string }[] }).errors?.[0];

describe('ContactUpserts', () => {
  test('an item failing inside the transaction (the field cap) is its own error; the others are written', async () => {
    const project = randomUUID();
    const full = Object.fromEntries(Array.from({ length: MAX_CUSTOM_FIELDS }, (_, i) => [`f${i}`, i]));
    const [seed] = await upserts.upsertMany(project, [
      { email: 'seed@example.com', defaultSubscribed: false, data: full },
    ]);
    expect(seed.ok).toBe(true);

    const results = await upserts.upsertMany(project, [
      { email: 'b@example.com', defaultSubscribed: true, data: { f1: 'x' } },
      { email: 'a@example.com', defaultSubscribed: false, data: { brandNew: 1 } },
      { email: 'bad', defaultSubscribed: false },
      { email: 'B@example.com', defaultSubscribed: false, subscribed: false },
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, false, false, true]);
    expect(errorOf(results[1])).toMatchObject({ field: 'data', code: 'too_many_fields' });
    expect(errorOf(results[2])).toMatchObject({ field: 'email' });
    // In order: the repeated address saw the first item's write.
    expect(results[3]).toMatchObject({
      ok: true,
      value: { isNew: false, contact: { email: 'b@example.com', subscribed: false } },
    });
    const { rows } = await db.pool.query('SELECT email FROM contacts WHERE project_id = $1 ORDER BY email', [project]);
    expect(rows.map((r) => r.email)).toEqual(['b@example.com', 'seed@example.com']);
  });

  test('a set-based write that fails (distinct addresses, the field cap) is written again one by one', async () => {
    const project = randomUUID();
    const full = Object.fromEntries(Array.from({ length: MAX_CUSTOM_FIELDS - 1 }, (_, i) => [`f${i}`, i]));
    const [seed] = await upserts.upsertMany(project, [
      { email: 'seed@example.com', defaultSubscribed: false, data: full },
    ]);
    expect(seed.ok).toBe(true);
    const { rows: before } = await db.pool.query('SELECT max(id) AS id FROM outbox');

    // Started in one tick, the two calls share a transaction: the failing one rolls it back, the other is kept.
    const [fine, mixed] = await Promise.all([
      upserts.upsertMany(project, [{ email: 'fine@example.com', defaultSubscribed: false, data: { f1: 2 } }]),
      upserts.upsertMany(project, [
        { email: 'c@example.com', defaultSubscribed: false, data: { one: 1 } },
        { email: 'd@example.com', defaultSubscribed: false, data: { two: 2 } },
        { email: 'e@example.com', defaultSubscribed: true, data: { f2: 'x' } },
      ]),
    ]);
    expect(fine.map((r) => r.ok)).toEqual([true]);
    // In address order the first new field fills the cap; the second is one too many.
    expect(mixed.map((r) => r.ok)).toEqual([true, false, true]);
    expect(errorOf(mixed[1])).toMatchObject({ field: 'data', code: 'too_many_fields' });
    expect(mixed[2]).toMatchObject({ ok: true, value: { isNew: true, contact: { email: 'e@example.com' } } });
    const { rows } = await db.pool.query('SELECT email FROM contacts WHERE project_id = $1 ORDER BY email', [project]);
    expect(rows.map((r) => r.email)).toEqual([
      'c@example.com',
      'e@example.com',
      'fine@example.com',
      'seed@example.com',
    ]);
    // One created message per contact written: none from the rolled-back attempts.
    const created = await db.pool.query(
      `SELECT payload->'contact'->>'email' AS email FROM outbox WHERE id > $1 AND subject LIKE '%created' ORDER BY 1`,
      [before[0].id],
    );
    expect(created.rows.map((r) => r.email)).toEqual(['c@example.com', 'e@example.com', 'fine@example.com']);
  });

  test('distinct addresses: new, changed and unchanged contacts answered in order, one message per write', async () => {
    const project = randomUUID();
    await upserts.upsertMany(project, [
      { email: 'old@example.com', defaultSubscribed: true, data: { plan: 'free' } },
      { email: 'same@example.com', defaultSubscribed: false, data: { plan: 'pro' } },
    ]);
    const { rows: before } = await db.pool.query('SELECT max(id) AS id FROM outbox');

    const results = await upserts.upsertMany(project, [
      { email: 'new@example.com', defaultSubscribed: false, data: { plan: 'team', seats: 3 } },
      { email: 'Old@example.com', defaultSubscribed: false, data: { plan: 'pro' } },
      { email: 'same@example.com', defaultSubscribed: true, data: { plan: 'pro' } },
      { email: 'fresh@example.com', defaultSubscribed: true, subscribed: false },
    ]);
    expect(results).toMatchObject([
      { ok: true, value: { isNew: true, contact: { email: 'new@example.com', subscribed: false } } },
      {
        ok: true,
        value: { isNew: false, isUpdate: true, contact: { email: 'old@example.com', data: { plan: 'pro' } } },
      },
      { ok: true, value: { isNew: false, isUpdate: true, contact: { email: 'same@example.com', subscribed: false } } },
      { ok: true, value: { isNew: true, contact: { email: 'fresh@example.com', subscribed: false } } },
    ]);
    const { rows: messages } = await db.pool.query(
      `SELECT subject, payload->'contact'->>'email' AS email FROM outbox WHERE id > $1 ORDER BY email`,
      [before[0].id],
    );
    expect(messages).toEqual([
      { subject: expect.stringMatching(/created$/), email: 'fresh@example.com' },
      { subject: expect.stringMatching(/created$/), email: 'new@example.com' },
      { subject: expect.stringMatching(/updated$/), email: 'old@example.com' },
    ]);
    const { rows: fields } = await db.pool.query('SELECT path FROM field_types WHERE project_id = $1 ORDER BY 1', [
      project,
    ]);
    expect(fields.map((f) => f.path)).toEqual(['plan', 'seats']);
  });

  test('more than 1000 items is a 422', async () => {
    const items = Array.from({ length: 1001 }, (_, i) => ({ email: `u${i}@example.com`, defaultSubscribed: false }));
    await expect(upserts.upsertMany(randomUUID(), items)).rejects.toMatchObject({ status: 422 });
  });
});
