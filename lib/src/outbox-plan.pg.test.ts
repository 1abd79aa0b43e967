import type { Bus } from './bus.js';
import { createPool, type Pool } from './db.js';
import { createLogger } from './logger.js';
import { enqueueMany, OutboxRelay } from './outbox.js';
import { createTestDatabase, explainedPlans, type TestDatabase } from './test-database.js';

// The relay's claim on an outbox the planner has no statistics of (never analysed, as a new database is, or any
// database while autovacuum is off or behind): every published row left a dead entry in outbox_unpublished. Plans
// come from auto_explain, as notices.

let db: TestDatabase;
let relayPool: Pool;
const logger = createLogger('silent');

const bus: Bus = {
  async publish() {},
  async subscribe() {},
  watch() {},
  connected: () => true,
  async close() {},
};

const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ subject: 'test.sent', payload: { n: i } }));

beforeAll(async () => {
  db = await createTestDatabase('outbox_plan', []);
  const url = (db.pool as unknown as { options: { connectionString: string } }).options.connectionString;
  // One connection: the relay's passes run on the client whose plans are explained.
  relayPool = createPool(url, 1);
});

afterAll(async () => {
  await relayPool.end();
  await db.drop();
});

test('the relay claims through outbox_unpublished in id order, however many rows it published before', async () => {
  const relay = new OutboxRelay({ service: 'svc', pool: relayPool, bus, logger, batchSize: 100 });
  for (let i = 0; i < 30; i++) {
    await enqueueMany(db.pool, rows(100));
    expect(await relay.drain()).toBe(100);
  }
  await enqueueMany(db.pool, rows(20));
  const client = await relayPool.connect();
  const plans = await explainedPlans(client, async () => {
    client.release();
    expect(await relay.drain()).toBe(20);
  });
  const claim = plans.filter((p) => p.includes('LockRows'));
  expect(claim).toHaveLength(1);
  // Not a bitmap of all 3,020 entries, a visit of every heap page they point to and a sort.
  expect(claim[0]).toMatch(/Index Scan using outbox_unpublished on outbox/);
  expect(claim[0]).not.toMatch(/Bitmap|Sort/);
  expect(claim[0]).toMatch(/Limit +\(cost=[^)]*\) \(actual rows=20 loops=1\)/);
});

test("with planSettings '' the claim is the planner's own and publishes the same rows", async () => {
  const published: string[] = [];
  const counting: Bus = { ...bus, publish: async (_subject, _payload, id) => void published.push(id!) };
  const relay = new OutboxRelay({ service: 'own', pool: relayPool, bus: counting, logger, planSettings: '' });
  await relay.drain();
  published.length = 0;
  await enqueueMany(db.pool, rows(20));
  const { rows: pending } = await db.pool.query<{ id: string }>(
    'SELECT id::text FROM outbox WHERE published_at IS NULL ORDER BY id',
  );
  const client = await relayPool.connect();
  const plans = await explainedPlans(client, async () => {
    client.release();
    expect(await relay.drain()).toBe(20);
  });
  expect(published).toEqual(pending.map((r) => `own-${r.id}`));
  // The planner's choice without statistics: the bitmap the default settings turn off.
  expect(plans.filter((p) => p.includes('LockRows'))[0]).toMatch(/Bitmap Index Scan on outbox_unpublished/);
});
