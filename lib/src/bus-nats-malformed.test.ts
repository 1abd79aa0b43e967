import { natsBusFixture, until } from './test-nats-bus.js';

// JetStream on the local NATS: a message whose bytes are not JSON (a foreign publisher) is logged
// and terminated, so the durable consumer goes on with the next one and never sees it again.

const nats = natsBusFixture('bustest', 'bus-test');
const { prefix, lines } = nats;

test('bytes that are not JSON are skipped (terminated, not redelivered); the next message is handled', async () => {
  const seen: unknown[] = [];
  let deliveries = 0;
  await nats.bus.subscribe('malformed-test', ['contacts.>'], async (m) => {
    deliveries++;
    seen.push(m.data);
  });
  await nats.raw.jetstream().publish(`${prefix}.contacts.deleted`, Buffer.from('{not json'));
  await nats.bus.publish('contacts.deleted', { contactId: 'c2' }, 'test-2');
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
  await nats.bus.subscribe(
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
  for (let n = 0; n < 20; n++) await nats.bus.publish('emails.sent', { n }, `concurrent-${n}`);
  expect(await until(() => handled.size === 20)).toBe(true);
  expect(most).toBeGreaterThan(1);
  expect(most).toBeLessThanOrEqual(8);
  await new Promise((r) => setTimeout(r, 1500)); // an unacked message would come back within ack_wait/nak delay
  expect([...handled.values()].every((count) => count === 1)).toBe(true);
});
