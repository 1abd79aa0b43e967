/**
 * The outbox relay and the NATS bus alone, as a track load drives them: waves of BENCH_WAVE outbox rows
 * (a group commit's `contacts.updated` and `events.tracked` rows, with request ids; one set-based insert
 * each), each wave relayed by one `OutboxRelay.drain()` to JetStream (`NatsBus`, streams under a
 * prefix of this run, deleted at the end). Prints CPU ms per message of this process and of its
 * PostgreSQL backends, the figures a loaded box moves least.
 *
 *   node --import tsx bench/outbox-relay.ts
 */
import { randomBytes } from 'node:crypto';
import { NatsBus } from '@svc/lib/bus-nats';
import { createLogger } from '@svc/lib/logger';
import { OutboxRelay } from '@svc/lib/outbox';
import { createTestDatabase } from '@svc/lib/test-database';
import { databaseCpu, dropPrefixed, fmt, NATS_URL } from './support.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20000);
const WAVE = Number(process.env.BENCH_WAVE ?? 54);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const logger = createLogger('error');
const prefix = `bench_relay_${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const db = await createTestDatabase('bench_relay', []);
const bus = NatsBus.start(NATS_URL, prefix, 'bench-relay', logger);
try {
  while (!bus.connected()) await new Promise((r) => setTimeout(r, 20));
  // BENCH_KEEP_PUBLISHED=0: the relay deletes what it published (as in embedded mode) instead of marking it.
  const keepPublished = process.env.BENCH_KEEP_PUBLISHED !== '0';
  const relay = new OutboxRelay({ service: 'bench', pool: db.pool, bus, logger, keepPublished });
  // About the size of the bench's contacts.updated snapshot and events.tracked payload.
  const insertWave = () =>
    db.pool.query(
      `INSERT INTO outbox (subject, payload, request_id, traceparent)
       SELECT CASE WHEN n % 2 = 0 THEN 'contacts.updated' ELSE 'events.tracked' END,
              jsonb_build_object('projectId', gen_random_uuid(), 'contact', jsonb_build_object(
                'id', gen_random_uuid(), 'email', 'user-' || n || '@bench.example.com', 'subscribed', true,
                'data', jsonb_build_object('plan', 'pro', 'visits', n, 'page', jsonb_build_object('path', '/p/1')),
                'createdAt', now(), 'updatedAt', now())),
              'req-' || n, NULL
       FROM generate_series(1, $1) AS n`,
      [WAVE],
    );
  for (let i = 0; i < 2000; i += WAVE) {
    await insertWave();
    await relay.drain();
  }
  for (let round = 0; round < ROUNDS; round++) {
    const pgCpu = (await databaseCpu(db.pool)).seconds;
    const self0 = process.cpuUsage();
    const pg0 = pgCpu();
    const t0 = performance.now();
    let sent = 0;
    while (sent < MESSAGES) {
      await insertWave();
      sent += await relay.drain();
    }
    const wall = performance.now() - t0;
    const self = process.cpuUsage(self0);
    const ms = (s: number) => fmt((1000 * s) / sent, 4);
    console.log(
      `${fmt(sent)} messages in waves of ${WAVE}: node ${ms((self.user + self.system) / 1e6)} ms/message, ` +
        `PostgreSQL ${ms(pgCpu() - pg0)} ms/message, wall ${fmt(wall / sent, 3)} ms/message`,
    );
  }
} finally {
  await bus.close();
  await dropPrefixed(prefix);
  await db.drop();
}
