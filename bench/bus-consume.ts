/**
 * The consuming side of the NATS bus alone: BENCH_MESSAGES `events.tracked`-sized messages published
 * to a stream of this run, then one durable consumer of `NatsBus.subscribe` (the handler does nothing)
 * takes them all. Prints CPU ms per message of this process while consuming.
 *
 * BENCH_RATE=<messages/s>: streaming instead of a backlog, as the services consume during a run. A child
 * process publishes the messages at that rate, in bursts every BENCH_TICK ms (a relay's wave), while the
 * consumer takes them as they come: each burst then arrives in few socket reads and its acks go out together.
 *
 *   node --import tsx bench/bus-consume.ts
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { NatsBus } from '@svc/lib/bus-nats';
import { createLogger } from '@svc/lib/logger';
import { cpuSeconds, dropPrefixed, fmt, NATS_URL, natsServerPid } from './support.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 1);
const RATE = Number(process.env.BENCH_RATE ?? 0);
const TICK = Number(process.env.BENCH_TICK ?? 20);
const PUBLISHER = process.env.BENCH_CONSUME_ROLE === 'publish';

const logger = createLogger('error');
const prefix = PUBLISHER
  ? process.env.BENCH_CONSUME_PREFIX!
  : `bench_consume_${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
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
  const burst = RATE ? Math.max(1, Math.round((RATE * TICK) / 1000)) : 100;
  const publishAll = async (paced: boolean) => {
    const t0 = performance.now();
    for (let i = 0, n = 0; i < MESSAGES; i += burst, n++) {
      if (paced) {
        const wait = t0 + n * TICK - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      await Promise.all(
        Array.from({ length: Math.min(burst, MESSAGES - i) }, (_, k) =>
          bus.publish('events.tracked', payload, `m-${i + k}`, { requestId: `req-${i + k}` }),
        ),
      );
    }
  };
  if (PUBLISHER) {
    await publishAll(true);
    process.exit(0);
  }
  if (!RATE) await publishAll(false);
  let seen = 0;
  let done: () => void = () => undefined;
  const all = new Promise<void>((r) => (done = r));
  const natsPid = natsServerPid();
  let self0 = process.cpuUsage();
  let t0 = performance.now();
  let nats0 = cpuSeconds(natsPid);
  await bus.subscribe(
    'bench',
    ['events.tracked'],
    async () => {
      // Streaming: counted from the first message on (the wait for the publisher is not consuming).
      if (++seen === 1 && RATE) [self0, t0, nats0] = [process.cpuUsage(), performance.now(), cpuSeconds(natsPid)];
      if (seen === MESSAGES) done();
    },
    { concurrency: CONCURRENCY },
  );
  if (RATE) {
    // The stream exists (this bus made it); the consumer is being set up: give it a moment, then publish.
    await new Promise((r) => setTimeout(r, 1000));
    const child = spawn(process.execPath, ['--import', 'tsx', process.argv[1]], {
      env: { ...process.env, BENCH_CONSUME_ROLE: 'publish', BENCH_CONSUME_PREFIX: prefix },
      stdio: 'inherit',
    });
    child.on('exit', (code) => code && console.error(`publisher exited with ${code}`));
  }
  await all;
  const wall = performance.now() - t0;
  const self = process.cpuUsage(self0);
  const nats = (cpuSeconds(natsPid) - nats0) * 1000;
  console.log(
    `${fmt(MESSAGES)} messages consumed (concurrency ${CONCURRENCY}` +
      `${RATE ? `, streamed at ${fmt(RATE)}/s in bursts every ${TICK} ms` : ''}): node ` +
      `${fmt((self.user + self.system) / 1000 / MESSAGES, 4)} ms/message ` +
      `(system ${fmt(self.system / 1000 / MESSAGES, 4)}), wall ${fmt(wall / MESSAGES, 3)} ms/message; ` +
      `nats-server (shared: other runs' traffic too) ${fmt(nats / MESSAGES, 4)} ms/message`,
  );
} finally {
  await bus.close();
  await dropPrefixed(prefix);
}
