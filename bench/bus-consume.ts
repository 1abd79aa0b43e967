/**
 * The consuming side of the NATS bus alone: BENCH_MESSAGES `events.tracked`-sized messages published
 * to a stream of this run, then one durable consumer of `NatsBus.subscribe` (the handler does nothing)
 * takes them all. Prints CPU ms per message of this process while consuming.
 *
 *   node --import tsx bench/bus-consume.ts
 */
import { randomBytes } from 'node:crypto';
import { NatsBus } from '@svc/lib/bus-nats';
import { createLogger } from '@svc/lib/logger';
import { dropPrefixed, fmt, NATS_URL } from './support.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 1);

const logger = createLogger('error');
const prefix = `bench_consume_${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const bus = NatsBus.start(NATS_URL, prefix, 'bench-consume', logger);
try {
  while (!bus.connected()) await new Promise((r) => setTimeout(r, 20));
  const payload = {
    projectId: '0f8fad5b-d9cb-469f-a165-70867728950e',
    contactId: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    eventId: '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    name: 'purchase',
    data: { plan: 'pro', visits: 12, page: { path: '/p/1' } },
    createdAt: new Date().toISOString(),
  };
  for (let i = 0; i < MESSAGES; i += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, k) =>
        bus.publish('events.tracked', payload, `m-${i + k}`, { requestId: `req-${i + k}` }),
      ),
    );
  }
  let seen = 0;
  let done: () => void = () => undefined;
  const all = new Promise<void>((r) => (done = r));
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  await bus.subscribe(
    'bench',
    ['events.tracked'],
    async () => {
      if (++seen === MESSAGES) done();
    },
    { concurrency: CONCURRENCY },
  );
  await all;
  const wall = performance.now() - t0;
  const self = process.cpuUsage(self0);
  console.log(
    `${fmt(MESSAGES)} messages consumed (concurrency ${CONCURRENCY}): node ` +
      `${fmt((self.user + self.system) / 1000 / MESSAGES, 4)} ms/message, wall ${fmt(wall / MESSAGES, 3)} ms/message`,
  );
} finally {
  await bus.close();
  await dropPrefixed(prefix);
}
