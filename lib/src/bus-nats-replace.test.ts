import { NatsBus } from './bus-nats.js';
import { natsBusFixture, until } from './test-nats-bus.js';

// JetStream on the local NATS: a consumer group that narrows its subjects (SubscribeOptions.replaces) replaces
// its old durable on a long-lived server: the new durables start where the old one had acknowledged, the old one
// is deleted, and a later start keeps the new durables as they are.

const nats = natsBusFixture('bustest', 'bus-test');
const { prefix, logger, url } = nats;

test('narrowed subjects: new durables start after the retired one acknowledged, which is deleted', async () => {
  const jsm = await nats.raw.jetstreamManager();
  const stream = nats.bus.streamName('EMAILS');
  const seen = (into: string[]) => async (m: { subject: string; data: unknown }) =>
    void into.push(`${m.subject}:${(m.data as { n: number }).n}`);

  const before: string[] = [];
  const old = NatsBus.start(url, prefix, 'old', logger);
  await old.subscribe('feed', ['emails.>'], seen(before));
  await nats.bus.publish('emails.sent', { n: 1 }, 'r-1');
  await nats.bus.publish('emails.open', { n: 2 }, 'r-2');
  expect(await until(() => before.length === 2)).toBe(true);
  // Acknowledgements go out a moment after the handler: wait until the broker has them.
  let floor = 0;
  for (let i = 0; i < 200 && floor < 2; i++) {
    floor = (await jsm.consumers.info(stream, 'feed_emails__')).ack_floor.stream_seq;
    if (floor < 2) await new Promise((r) => setTimeout(r, 50));
  }
  expect(floor).toBe(2);
  await old.close();
  // Published while no one consumes: the new durables must get the open one, not the sent one.
  await nats.bus.publish('emails.sent', { n: 3 }, 'r-3');
  await nats.bus.publish('emails.open', { n: 4 }, 'r-4');

  const after: string[] = [];
  const next = NatsBus.start(url, prefix, 'next', logger);
  await next.subscribe('feed', ['emails.open', 'emails.click'], seen(after), { replaces: ['emails.>'] });
  expect(await until(() => after.length === 1)).toBe(true);
  await nats.bus.publish('emails.click', { n: 5 }, 'r-5');
  await nats.bus.publish('emails.sent', { n: 6 }, 'r-6');
  expect(await until(() => after.length === 2)).toBe(true);
  await new Promise((r) => setTimeout(r, 500));
  expect(after).toEqual(['emails.open:4', 'emails.click:5']);
  await expect(jsm.consumers.info(stream, 'feed_emails__')).rejects.toThrow(/consumer not found/);
  expect((await jsm.consumers.info(stream, 'feed_emails_open')).config.opt_start_seq).toBe(3);
  expect(nats.lines).toContainEqual(
    expect.objectContaining({ event: 'nats.consumer_retired', durable: 'feed_emails__' }),
  );
  await next.close();

  // A later start: nothing to retire, the durables made at a start sequence are kept and go on where they were.
  const again: string[] = [];
  const third = NatsBus.start(url, prefix, 'third', logger);
  await third.subscribe('feed', ['emails.open', 'emails.click'], seen(again), { replaces: ['emails.>'] });
  await nats.bus.publish('emails.open', { n: 7 }, 'r-7');
  expect(await until(() => again.length === 1)).toBe(true);
  await new Promise((r) => setTimeout(r, 500));
  expect(again).toEqual(['emails.open:7']);
  expect(nats.lines.filter((l) => l.event === 'nats.consumer_failed')).toEqual([]);
  await third.close();
});
