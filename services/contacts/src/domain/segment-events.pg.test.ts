import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { MembershipChangedSchema } from '@svc/proto/svc/segments/v1/events_pb';
import { EventsStore } from '../store/events-store.js';
import { migrations } from '../store/migrations.js';
import { SegmentEvents } from './segment-events.js';

// Segment entries and exits heard from the bus become segment.<slug>.<change> events; messages that arrive together
// share one statement and their events go out as events.tracked_batch messages, one per project.

let db: TestDatabase;
let segmentEvents: SegmentEvents;

beforeAll(async () => {
  db = await createTestDatabase('contacts_segment_events', migrations);
  segmentEvents = new SegmentEvents(db.pool, new EventsStore(db.pool));
});

afterAll(() => db.drop());

const contact = async (projectId: string) => {
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, $3, true, '{}')`,
    [id, projectId, `${id}@example.com`],
  );
  return id;
};

const change = (projectId: string, contactId: string, c: string, slug = 'vip') =>
  create(MembershipChangedSchema, { projectId, contactId, segmentId: randomUUID(), slug, change: c });

const lastOutboxId = async () =>
  Number((await db.pool.query('SELECT coalesce(max(id), 0) AS n FROM outbox')).rows[0].n);

test('messages of two projects at once: the events in order, one batch message per project', async () => {
  const [p1, p2] = [randomUUID(), randomUUID()];
  const [a, b, c] = [await contact(p1), await contact(p1), await contact(p2)];
  const gone = randomUUID(); // a contact deleted since segments evaluated it
  const before = await lastOutboxId();
  const messages = [
    ['m1', change(p1, a, 'entry')],
    ['m2', change(p2, c, 'entry', 'gold')],
    ['m3', change(p1, b, 'entry')],
    ['m4', change(p1, gone, 'entry')],
    ['m5', change(p1, a, 'exit')],
    ['m6', change(p1, a, 'sideways')],
  ] as const;
  await Promise.all(messages.map(([id, m]) => segmentEvents.record(`${before}-${id}`, m)));

  const rows = async (projectId: string) =>
    (await db.pool.query('SELECT contact_id, name, data FROM events WHERE project_id = $1 ORDER BY id', [projectId]))
      .rows;
  expect(await rows(p1)).toEqual([
    { contact_id: a, name: 'segment.vip.entry', data: { segmentId: messages[0][1].segmentId } },
    { contact_id: b, name: 'segment.vip.entry', data: { segmentId: messages[2][1].segmentId } },
    { contact_id: a, name: 'segment.vip.exit', data: { segmentId: messages[4][1].segmentId } },
  ]);
  expect(await rows(p2)).toEqual([
    { contact_id: c, name: 'segment.gold.entry', data: { segmentId: messages[1][1].segmentId } },
  ]);
  const { rows: out } = await db.pool.query('SELECT subject, payload FROM outbox WHERE id > $1 ORDER BY id', [before]);
  expect(out.map((r) => [r.subject, r.payload.projectId])).toEqual([
    ['events.tracked_batch', p1],
    ['events.tracked_batch', p2],
  ]);
  expect(out[0].payload.events.map((e: { contactId: string; name: string }) => [e.contactId, e.name])).toEqual([
    [a, 'segment.vip.entry'],
    [b, 'segment.vip.entry'],
    [a, 'segment.vip.exit'],
  ]);

  // Redelivered (alone or together with a new one): only the new message records an event.
  const again = await lastOutboxId();
  const d = await contact(p2);
  await Promise.all([
    segmentEvents.record(`${before}-m1`, messages[0][1]),
    segmentEvents.record(`${before}-m7`, change(p2, d, 'entry', 'gold')),
  ]);
  await segmentEvents.record(`${before}-m3`, messages[2][1]);
  expect((await rows(p1)).length).toBe(3);
  expect((await rows(p2)).map((r) => r.contact_id)).toEqual([c, d]);
  const { rows: later } = await db.pool.query('SELECT payload FROM outbox WHERE id > $1 ORDER BY id', [again]);
  expect(later.map((r) => r.payload.events.map((e: { contactId: string }) => e.contactId))).toEqual([[d]]);
});
