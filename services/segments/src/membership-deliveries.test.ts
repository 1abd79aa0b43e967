import { randomUUID } from 'node:crypto';
import { NatsBus } from '@svc/lib/bus-nats';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { natsBusFixture, until } from '@svc/lib/test-nats-bus';
import { MembershipDeliveries } from './membership-deliveries.js';
import { migrations } from './store/migrations.js';
import { SegmentsStore } from './store/segments-store.js';

// Real PostgreSQL and NATS: the membership consumers' durables are paused while no project tracks a segment, and
// a pass restarts them once one is (Tracking.compute runs one before a new tracked segment's baseline).

const nats = natsBusFixture('segpause', 'segments-test');
let db: TestDatabase;
let store: SegmentsStore;

beforeAll(async () => {
  db = await createTestDatabase('segments_deliveries', migrations);
  store = new SegmentsStore(db.pool);
});
afterAll(() => db.drop());

const subjects = ['contacts.updated', 'events.tracked'];

async function filters(durable: string) {
  const jsm = await nats.raw.jetstreamManager();
  return Promise.all(
    subjects.map(async (s) => {
      const stream = nats.bus.streamName(s.startsWith('events') ? 'EVENTS' : 'CONTACTS');
      const info = await jsm.consumers.info(stream, `${durable}_${s.replace('.', '_')}`).catch(() => undefined);
      return info?.config.filter_subject;
    }),
  );
}

const paused = (f: (string | undefined)[]) => f.every((s) => s?.endsWith('.__paused__'));
const delivering = (f: (string | undefined)[]) => f.every((s) => s && !s.endsWith('.__paused__'));

test('deliveries are paused while no segment is tracked, and a pass after one is tracked restarts them', async () => {
  const durable = `membership${randomUUID().slice(0, 8)}`;
  const seen: string[] = [];
  const bus = NatsBus.start(nats.url, nats.prefix, 'segments', nats.logger);
  await bus.subscribe(durable, subjects, async (m) => void seen.push(m.subject), { concurrency: 4 });
  const deliveries = new MembershipDeliveries(db.pool, store, bus, nats.logger);
  let f = await filters(durable);
  for (let i = 0; i < 200 && !(bus.connected() && delivering(f)); i++) f = await filters(durable);
  expect(delivering(f)).toBe(true);

  deliveries.start({ durable, subjects });
  for (let i = 0; i < 200 && !paused(f); i++) f = await filters(durable);
  expect(paused(f)).toBe(true);
  await nats.bus.publish('contacts.updated', { n: 1 }, `u-${randomUUID()}`);

  // A tracked segment (another project's untracked one changes nothing): the pass its tracking starts with.
  const segment = (tracked: boolean) =>
    store.insert(db.pool, {
      id: randomUUID(),
      projectId: randomUUID(),
      name: 's',
      description: null,
      type: 'DYNAMIC',
      condition: null,
      trackMembership: tracked,
      slug: randomUUID(),
      memberCount: 0,
    });
  await segment(false);
  await deliveries.sync();
  expect(paused(await filters(durable))).toBe(true);
  const tracked = await segment(true);
  await deliveries.sync();
  expect(delivering(await filters(durable))).toBe(true);
  await nats.bus.publish('events.tracked', { n: 2 }, `t-${randomUUID()}`);
  expect(await until(() => seen.length === 1)).toBe(true);
  expect(seen).toEqual(['events.tracked']);

  // Tracking stops: the next pass pauses again.
  await db.pool.query('UPDATE segments SET track_membership = false WHERE id = $1', [tracked!.id]);
  await deliveries.sync();
  expect(paused(await filters(durable))).toBe(true);
  await deliveries.stop();
  await bus.close();
});

test("a pass the broker cannot answer fails as a dependency down (503): a tracked segment's start waits", async () => {
  const bus = NatsBus.start('nats://127.0.0.1:1', nats.prefix, 'segments', nats.logger);
  const deliveries = new MembershipDeliveries(db.pool, store, bus, nats.logger);
  deliveries.start({ durable: 'membership-down', subjects });
  await expect(deliveries.sync()).rejects.toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
  await deliveries.stop();
  await bus.close();
});
