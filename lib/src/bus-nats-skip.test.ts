import { NatsBus } from './bus-nats.js';
import { natsBusFixture, until } from './test-nats-bus.js';

// JetStream on the local NATS: SubscribeOptions.skip acknowledges a message without running the handler (the
// broker holds nothing for the durable afterwards), and a skip that throws skips nothing.

const nats = natsBusFixture('bustest', 'bus-test');
const { prefix, logger, url } = nats;

const n = (data: unknown) => (data as { n: number }).n;

/** The durable once every message it was given is acknowledged (acknowledgements go out a moment later). */
async function settled(durable: string) {
  const jsm = await nats.raw.jetstreamManager();
  const stream = nats.bus.streamName('EMAILS');
  let info = await jsm.consumers.info(stream, durable);
  for (let i = 0; i < 100 && (info.num_pending || info.num_ack_pending); i++) {
    await new Promise((r) => setTimeout(r, 50));
    info = await jsm.consumers.info(stream, durable);
  }
  return info;
}

test('a message the skip answers true for is acknowledged without running the handler', async () => {
  const seen: number[] = [];
  const bus = NatsBus.start(url, prefix, 'skipper', logger);
  await bus.subscribe('skipper', ['emails.open'], async (m) => void seen.push(n(m.data)), {
    concurrency: 4,
    skip: (subject, data) => subject === 'emails.open' && n(data) % 2 === 1,
  });
  for (let i = 1; i <= 6; i++) await nats.bus.publish('emails.open', { n: i }, `s-${i}`);
  expect(await until(() => seen.length === 3)).toBe(true);
  const info = await settled('skipper_emails_open');
  expect([info.num_pending, info.num_ack_pending, info.ack_floor.stream_seq]).toEqual([0, 0, 6]);
  expect(seen.sort()).toEqual([2, 4, 6]);
  await bus.close();
});

test('a skip that throws skips nothing: the handler gets the message', async () => {
  const seen: number[] = [];
  const bus = NatsBus.start(url, prefix, 'thrower', logger);
  await bus.subscribe('thrower', ['emails.click'], async (m) => void seen.push(n(m.data)), {
    skip: () => {
      throw new Error('cache gone');
    },
  });
  await nats.bus.publish('emails.click', { n: 1 }, 't-1');
  expect(await until(() => seen.length === 1)).toBe(true);
  expect(seen).toEqual([1]);
  await bus.close();
});
