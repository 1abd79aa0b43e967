import { randomUUID } from 'node:crypto';
import { MemoryBus } from '@svc/lib/bus-memory';
import { on, subscribeTopics } from '@svc/lib/bus-topic';
import { withTransaction } from '@svc/lib/db';
import { enqueue, enqueueMessage, OutboxRelay } from '@svc/lib/outbox';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { capturingLogger } from '@svc/lib/test-logger';
import { ActivityStore } from '../store/activity-store.js';
import { EmailsStore } from '../store/emails-store.js';
import { migrations } from '../store/migrations.js';
import { emailLifecycleTopic } from '@svc/proto/topics/messaging';
import { ActivityFeed, enqueueLifecycle } from './activity-feed.js';
import { MarketingWithdrawals } from './withdrawals.js';
import { emailsSentMessages, lifecycleMessage, lifecyclePayload } from './email-events.js';

// The feed's consumer reading what the delivery path publishes, through the real outbox, relay
// and in-process bus, on a real PostgreSQL; a malformed row on the bus is skipped, not retried.

let db: TestDatabase;
const { logger, lines } = capturingLogger();

beforeAll(async () => {
  db = await createTestDatabase('activity_feed', migrations);
});

afterAll(async () => {
  await db?.drop();
});

test('lifecycle messages published through the outbox land in the feed; a malformed one is skipped', async () => {
  // `emails.sent` is enqueued with its feed row (enqueueLifecycle, as the delivery worker does); the others come
  // back from the bus. A consumer still reading `emails.sent` (an older replica) would add nothing: same source id.
  const bus = new MemoryBus(logger);
  const feed = new ActivityFeed(new ActivityStore(db.pool), new EmailsStore(db.pool));
  await subscribeTopics(bus, 'messaging-activity', feed.routes(), logger);
  const relay = new OutboxRelay({ service: 'messaging', pool: db.pool, bus, logger });
  const store = new ActivityStore(db.pool);
  const legacy: string[] = [];
  await subscribeTopics(
    bus,
    'legacy-feed',
    [on(emailLifecycleTopic('sent'), async (_m, { id }) => void legacy.push(id))],
    logger,
  );

  const projectId = randomUUID();
  const email = {
    id: randomUUID(),
    project_id: projectId,
    contact_id: randomUUID(),
    to_email: 'a@b.co',
    subject: 'Hi',
    template_id: null,
  };
  await withTransaction(db.pool, async (tx) => {
    const sent = lifecycleMessage(email, 'sent', { messageId: '<m@x>' }, new Date('2026-01-01T00:00:00Z'));
    await enqueueLifecycle(tx, store, [sent]);
    await enqueue(tx, 'emails.open', { projectId, type: 'open', occurredAt: 'yesterday' });
    await enqueueMessage(tx, lifecycleMessage(email, 'open', { isFirstOpen: true }, new Date('2026-01-01T00:01:00Z')));
  });
  const started = Date.now();
  expect(await relay.drain()).toBe(3);
  expect(Date.now() - started).toBeLessThan(2000); // the memory bus retries a failed handler for seconds

  const { items, total } = await feed.list(projectId, {});
  expect(total).toBe(2);
  expect(items.map((r) => [r.type, r.email_id, r.email, r.data])).toEqual([
    ['email.open', email.id, 'a@b.co', { email: 'a@b.co', subject: 'Hi', isFirstOpen: true }],
    ['email.sent', email.id, 'a@b.co', { email: 'a@b.co', subject: 'Hi', messageId: '<m@x>' }],
  ]);
  expect(items[0].occurred_at.toISOString()).toBe('2026-01-01T00:01:00.000Z');
  expect(items[1].occurred_at.toISOString()).toBe('2026-01-01T00:00:00.000Z');
  expect(legacy).toEqual([items[1].source_id]);
  expect(lines).toContainEqual(
    expect.objectContaining({ event: 'bus.malformed', durable: 'messaging-activity', subject: 'emails.open' }),
  );
});

test("sent mail of a project deleted while its delivery batch was out gets no feed row; another's does", async () => {
  const store = new ActivityStore(db.pool);
  const feed = new ActivityFeed(store, new EmailsStore(db.pool));
  const [gone, kept] = [randomUUID(), randomUUID()];
  const at = new Date('2026-01-01T00:00:00Z');
  const email = (projectId: string) => ({
    id: randomUUID(),
    project_id: projectId,
    contact_id: randomUUID(),
    to_email: 'a@b.co',
    subject: 'Hi',
    template_id: null,
  });
  const batch = [gone, kept].flatMap((p) =>
    emailsSentMessages([lifecyclePayload(email(p), 'sent', { messageId: `<${p}@x>` }, at)]),
  );
  const wiped = { drops: (projectId: string) => projectId === gone };
  await withTransaction(db.pool, (tx) => enqueueLifecycle(tx, store, batch, wiped));
  expect((await feed.list(gone, {})).total).toBe(0);
  expect((await feed.list(kept, {})).total).toBe(1);
});

test("a deliveries.emails_sent message's emails get their feed rows in the transaction that enqueues it", async () => {
  const store = new ActivityStore(db.pool);
  const feed = new ActivityFeed(store, new EmailsStore(db.pool));
  const projectId = randomUUID();
  const at = new Date('2026-01-01T00:00:00Z');
  const emails = ['a@b.co', 'c@d.co'].map((to) => ({
    id: randomUUID(),
    project_id: projectId,
    contact_id: randomUUID(),
    to_email: to,
    subject: 'Hi',
    template_id: null,
  }));
  const batch = emailsSentMessages(emails.map((e) => lifecyclePayload(e, 'sent', { messageId: `<${e.id}@x>` }, at)));
  await withTransaction(db.pool, (tx) => enqueueLifecycle(tx, store, batch));
  const { rows: outbox } = await db.pool.query(`SELECT id FROM outbox WHERE subject = 'deliveries.emails_sent'`);
  const { items, total } = await feed.list(projectId, {});
  expect(total).toBe(2);
  expect(items.map((r) => [r.type, r.email_id, r.email, r.occurred_at.toISOString()]).sort()).toEqual(
    emails.map((e) => ['email.sent', e.id, e.to_email, at.toISOString()]).sort(),
  );
  expect(items.map((r) => r.source_id).sort()).toEqual([0, 1].map((i) => `messaging-${outbox.at(-1).id}/${i}`));
});

test('tracked batches: a row per event, unsubscribes withdrawn, a bad event skipped alone, no repeats', async () => {
  const store = new ActivityStore(db.pool);
  const emails = new EmailsStore(db.pool);
  const feed = new ActivityFeed(store, emails);
  const withdrawals = new MarketingWithdrawals(db.pool, emails);
  const routes = [...feed.routes(), ...withdrawals.routes()].filter((r) => r.subject === 'events.tracked_batch');
  expect(routes).toHaveLength(2);
  const [projectId, leaving, staying] = [randomUUID(), randomUUID(), randomUUID()];
  const queued = async (contactId: string) => {
    const id = randomUUID();
    await db.pool.query(
      `INSERT INTO emails
         (id, project_id, contact_id, to_email, from_email, subject, html, text, type, message_id, status)
       VALUES ($1, $2, $3, 'a@b.co', 'x@y.co', 's', '', '', 'MARKETING', '<m@y.co>', 'queued')`,
      [id, projectId, contactId],
    );
    return id;
  };
  const [leavingMail, stayingMail] = [await queued(leaving), await queued(staying)];
  const event = (contactId: string, name: string, data: object = {}) => ({
    projectId,
    contactId,
    eventId: randomUUID(),
    name,
    data,
    createdAt: '2026-01-01T00:00:00Z',
  });
  const events = [
    event(staying, 'signed-up', { plan: 'pro' }),
    { ...event(staying, 'contact.unsubscribed'), contactId: 7 }, // does not read: skipped alone
    { ...event(staying, 'contact.unsubscribed'), projectId: randomUUID() }, // of another project: skipped
    'not an event',
    event(leaving, 'contact.unsubscribed'),
    // In proto field names: decoded.
    { project_id: projectId, contact_id: leaving, event_id: randomUUID(), name: 'page.viewed', data: {} },
  ];
  const message = { id: 'contacts-900', subject: 'events.tracked_batch', data: { projectId, events } };
  for (let copy = 0; copy < 2; copy++) for (const r of routes) await r.deliver(message);

  const { items } = await feed.list(projectId, {});
  expect(items.map((r) => [r.source_id, r.type, r.name, r.contact_id]).sort()).toEqual([
    ['contacts-900/0', 'event', 'signed-up', staying],
    ['contacts-900/4', 'contact.unsubscribed', 'contact.unsubscribed', leaving],
    ['contacts-900/5', 'event', 'page.viewed', leaving],
  ]);
  const status = async (id: string) =>
    (await db.pool.query('SELECT status FROM emails WHERE id = $1', [id])).rows[0].status as string;
  expect([await status(leavingMail), await status(stayingMail)]).toEqual(['suppressed', 'queued']);
  // One emails.suppressed for the withdrawn mail, not one per copy of the batch.
  const { rows } = await db.pool.query(
    `SELECT count(*)::int AS n FROM outbox WHERE subject = 'emails.suppressed' AND payload->>'emailId' = $1`,
    [leavingMail],
  );
  expect(rows[0].n).toBe(1);
});

test("a deleted project's rows are dropped as a batch is written; another project's are written", async () => {
  // Unwrapped routes (no WipedProjects.routes): the messages reach the batch, as one does that arrived just before
  // the deletion; the write leaves the deleted project's rows out.
  const bus = new MemoryBus(logger);
  const gone = randomUUID();
  const live = randomUUID();
  const feed = new ActivityFeed(new ActivityStore(db.pool), new EmailsStore(db.pool), { drops: (p) => p === gone });
  await subscribeTopics(bus, 'messaging-activity-deleted', feed.routes(), logger);
  const relay = new OutboxRelay({ service: 'messaging', pool: db.pool, bus, logger });
  const emailOf = (projectId: string) => ({
    id: randomUUID(),
    project_id: projectId,
    contact_id: randomUUID(),
    to_email: 'a@b.co',
    subject: 'Hi',
    template_id: null,
  });
  await withTransaction(db.pool, async (tx) => {
    for (const p of [gone, live]) await enqueueMessage(tx, lifecycleMessage(emailOf(p), 'open', {}, new Date()));
    await enqueue(tx, 'events.tracked', { projectId: gone, contactId: randomUUID(), eventId: randomUUID(), name: 'x' });
  });
  await relay.drain();
  expect((await feed.list(live, {})).total).toBe(1);
  expect((await feed.list(gone, {})).total).toBe(0);
  await bus.close();
});
