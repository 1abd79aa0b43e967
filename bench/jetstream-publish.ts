/**
 * No platform, no database: the bus's JetStream publish alone, as the outbox relay drives it (waves of
 * `BENCH_BATCH` publishes in flight at once, each with a dedupe id and a request id header), two ways in
 * alternation: nats.js `js.publish` and our `JetStreamPublisher`. Prints CPU ms per message of this process.
 *
 *   node --import tsx bench/jetstream-publish.ts
 */
import { connect, headers, nanos, StorageType } from 'nats';
import { JetStreamPublisher } from '../lib/src/jetstream-publish.js';

const URL = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const prefix = `bench_jspub_${Date.now().toString(36)}`;

const nc = await connect({ servers: URL, noAsyncTraces: true });
const jsm = await nc.jetstreamManager();
await jsm.streams.add({
  name: prefix,
  subjects: [`${prefix}.>`],
  storage: StorageType.File,
  duplicate_window: nanos(120_000),
});
const js = nc.jetstream();
const publisher = new JetStreamPublisher(nc);
const payload = Buffer.from(JSON.stringify({ contactId: 'c'.repeat(25), event: 'purchase', data: { visits: 3 } }));
let n = 0;

const ways: Record<string, (subject: string, id: string) => Promise<unknown>> = {
  'nats.js js.publish': (subject, id) => {
    const h = headers();
    h.set('X-Request-Id', id);
    return js.publish(subject, payload, { msgID: id, headers: h });
  },
  JetStreamPublisher: (subject, id) => {
    const h = headers();
    h.set('X-Request-Id', id);
    return publisher.publish(subject, payload, id, h);
  },
};

try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, publish] of Object.entries(ways)) {
      const cpu = process.cpuUsage();
      const start = performance.now();
      for (let sent = 0; sent < MESSAGES; sent += BATCH) {
        const wave: Promise<unknown>[] = [];
        for (let i = 0; i < BATCH; i++) wave.push(publish(`${prefix}.events.tracked`, `m-${n++}`));
        await Promise.all(wave);
      }
      const used = process.cpuUsage(cpu);
      const ms = (used.user + used.system) / 1000;
      const wall = performance.now() - start;
      console.log(
        `${name.padEnd(20)} ${(ms / MESSAGES).toFixed(4)} ms CPU per message, ` +
          `${Math.round((MESSAGES / wall) * 1000)}/s`,
      );
    }
  }
} finally {
  await jsm.streams.delete(prefix).catch(() => undefined);
  await nc.close();
}
