import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from 'nats';
import { STREAMS } from './bus.js';
import { NatsBus } from './bus-nats.js';
import { capturingLogger } from './test-logger.js';

// JetStream on the local NATS: a message whose bytes are not JSON (a foreign publisher) is logged
// and terminated, so the durable consumer goes on with the next one and never sees it again.

const URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const prefix = `bustest${randomBytes(4).toString('hex')}`;
const { logger, lines } = capturingLogger();
let bus: NatsBus;
let raw: NatsConnection;

const until = async (ok: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return ok();
};

beforeAll(async () => {
  bus = NatsBus.start(URL, prefix, 'bus-test', logger);
  raw = await connect({ servers: URL });
  expect(await until(() => bus.connected())).toBe(true);
});

afterAll(async () => {
  await bus?.close();
  if (raw) {
    const jsm = await raw.jetstreamManager();
    for (const s of STREAMS) await jsm.streams.delete(bus.streamName(s.name)).catch(() => undefined);
    await raw.close();
  }
});

test('bytes that are not JSON are skipped (terminated, not redelivered); the next message is handled', async () => {
  const seen: unknown[] = [];
  let deliveries = 0;
  await bus.subscribe('malformed-test', ['contacts.>'], async (m) => {
    deliveries++;
    seen.push(m.data);
  });
  await raw.jetstream().publish(`${prefix}.contacts.deleted`, Buffer.from('{not json'));
  await bus.publish('contacts.deleted', { contactId: 'c2' }, 'test-2');
  expect(await until(() => seen.length === 1)).toBe(true);
  expect(seen).toEqual([{ contactId: 'c2' }]);
  expect(lines).toContainEqual(
    expect.objectContaining({
      level: 50,
      event: 'bus.malformed',
      durable: expect.stringContaining('malformed-test'),
      subject: 'contacts.deleted',
    }),
  );
  // A nak would bring it back within a second or two; a terminated message never comes back.
  await new Promise((r) => setTimeout(r, 1500));
  expect(lines.filter((l) => l.event === 'bus.malformed')).toHaveLength(1);
  expect(deliveries).toBe(1);
});

test('concurrency: messages handled at once; a failed one is redelivered, the others acked once', async () => {
  let inHandler = 0;
  let most = 0;
  const handled = new Map<string, number>();
  let failedOnce = false;
  await bus.subscribe(
    'concurrent-test',
    ['emails.*'],
    async (m) => {
      inHandler++;
      most = Math.max(most, inHandler);
      await new Promise((r) => setTimeout(r, 50));
      inHandler--;
      const n = (m.data as { n: number }).n;
      if (n === 3 && !failedOnce) {
        failedOnce = true;
        throw new Error('database down for a moment');
      }
      handled.set(String(n), (handled.get(String(n)) ?? 0) + 1);
    },
    { concurrency: 8 },
  );
  for (let n = 0; n < 20; n++) await bus.publish('emails.sent', { n }, `concurrent-${n}`);
  expect(await until(() => handled.size === 20)).toBe(true);
  expect(most).toBeGreaterThan(1);
  expect(most).toBeLessThanOrEqual(8);
  await new Promise((r) => setTimeout(r, 1500)); // an unacked message would come back within ack_wait/nak delay
  expect([...handled.values()].every((count) => count === 1)).toBe(true);
});
