import { NatsBus } from './bus-nats.js';
import { natsBusFixture, until } from './test-nats-bus.js';

// JetStream on the local NATS: Bus.pauseDeliveries passes a durable's messages over for good while it is paused,
// for every replica of the durable; restarting it, or the consumer loop making it again, delivers from then on.

const nats = natsBusFixture('buspause', 'bus-test');
const { prefix, logger, url } = nats;

const n = (data: unknown) => (data as { n: number }).n;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The durable as the broker has it, once it exists (the bus makes it in the background). */
async function durable(name: string) {
  const jsm = await nats.raw.jetstreamManager();
  const stream = nats.bus.streamName('CONTACTS');
  for (let i = 0; i < 200; i++) {
    const info = await jsm.consumers.info(stream, name).catch(() => undefined);
    if (info) return info;
    await pause(50);
  }
  throw new Error(`durable ${name} never made`);
}

/** The durable's filter once it is `filter` (or the last one seen after 10 s). */
async function filterBecomes(name: string, filter: string) {
  let seen = '';
  for (let i = 0; i < 200 && seen !== filter; i++) {
    seen = (await durable(name)).config.filter_subject ?? '';
    if (seen !== filter) await pause(50);
  }
  return seen;
}

/** A bus consuming `subject` into `seen`, once its durable exists. */
async function consumer(name: string, subject: string, seen: number[]) {
  const bus = NatsBus.start(url, prefix, name, logger);
  await bus.subscribe(name, [subject], async (m) => void seen.push(n(m.data)), { concurrency: 4 });
  await durable(`${name}_${subject.replace(/\./g, '_')}`);
  await until(() => bus.connected());
  return bus;
}

test('a paused durable is passed over for good; once restarted it gets what is published from then on', async () => {
  const seen: number[] = [];
  const bus = await consumer('pauser', 'contacts.created', seen);
  await nats.bus.publish('contacts.created', { n: 1 }, 'p-1');
  expect(await until(() => seen.length === 1)).toBe(true);
  await bus.pauseDeliveries('pauser', ['contacts.created'], true);
  for (let i = 2; i <= 4; i++) await nats.bus.publish('contacts.created', { n: i }, `p-${i}`);
  await pause(500);
  const paused = await durable('pauser_contacts_created');
  expect([paused.num_pending, paused.num_ack_pending]).toEqual([0, 0]);
  await bus.pauseDeliveries('pauser', ['contacts.created'], false);
  await nats.bus.publish('contacts.created', { n: 5 }, 'p-5');
  expect(await until(() => seen.length === 2)).toBe(true);
  await pause(300);
  expect(seen).toEqual([1, 5]);
  await bus.close();
});

test('a pause holds for every replica of the durable, and either one restarts it', async () => {
  const seen: number[] = [];
  const one = await consumer('replicas', 'contacts.updated', seen);
  const two = await consumer('replicas', 'contacts.updated', seen);
  await one.pauseDeliveries('replicas', ['contacts.updated'], true);
  // Pausing again (another replica's pass) changes nothing.
  await two.pauseDeliveries('replicas', ['contacts.updated'], true);
  for (let i = 1; i <= 3; i++) await nats.bus.publish('contacts.updated', { n: i }, `r-${i}`);
  await pause(500);
  expect(seen).toEqual([]);
  await two.pauseDeliveries('replicas', ['contacts.updated'], false);
  for (let i = 4; i <= 6; i++) await nats.bus.publish('contacts.updated', { n: i }, `r-${i}`);
  expect(await until(() => seen.length === 3)).toBe(true);
  expect(seen.sort()).toEqual([4, 5, 6]);
  await Promise.all([one.close(), two.close()]);
});

test('a paused durable that is lost comes back delivering, and a restart of the process delivers again', async () => {
  const seen: number[] = [];
  let bus = await consumer('remade', 'contacts.deleted', seen);
  await bus.pauseDeliveries('remade', ['contacts.deleted'], true);
  const jsm = await nats.raw.jetstreamManager();
  await jsm.consumers.delete(nats.bus.streamName('CONTACTS'), 'remade_contacts_deleted');
  // Nothing to pause or restart while it is missing: no error.
  await bus.pauseDeliveries('remade', ['contacts.deleted'], true);
  // The consumer loop makes it again, with its real filter (from the stream's start, as any lost durable).
  await nats.bus.publish('contacts.deleted', { n: 1 }, 'd-1');
  expect(await until(() => seen.includes(1), 20_000)).toBe(true);
  expect(await filterBecomes('remade_contacts_deleted', `${prefix}.contacts.deleted`)).toBe(
    `${prefix}.contacts.deleted`,
  );

  await bus.pauseDeliveries('remade', ['contacts.deleted'], true);
  await bus.close();
  bus = await consumer('remade', 'contacts.deleted', seen);
  // The new process's consumer loop adds the durable with its real filter: delivering again.
  expect(await filterBecomes('remade_contacts_deleted', `${prefix}.contacts.deleted`)).toBe(
    `${prefix}.contacts.deleted`,
  );
  await nats.bus.publish('contacts.deleted', { n: 2 }, 'd-2');
  expect(await until(() => seen.includes(2))).toBe(true);
  await bus.close();
}, 40_000);
