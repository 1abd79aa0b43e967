import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { STREAMS } from './bus.js';
import { natsBusFixture } from './test-nats-bus.js';

// A stream made again right after its deletion can lose its files to the server's removal of the old one; every
// publish then fails with "error creating msg block file ...: no such file or directory" (code 503). Here the
// files of a freshly made stream are removed on disk (the local NATS's store folder), and the publishes that
// need a new block must still be stored: the bus deletes the stream, makes it again and its listeners refill it.

const nats = natsBusFixture('storeloss', 'store-loss-test');
const { lines } = nats;
const STORE_DIR = process.env.TEST_NATS_STORE_DIR ?? '/var/lib/nats-server';

test('a fresh stream whose files are gone is made again, and publishing goes on', async () => {
  const refilled: string[][] = [];
  nats.bus.onStreamRecreated((subjects) => refilled.push(subjects));
  await nats.bus.publish('contacts.deleted', { contactId: 'before' }, 'loss-0');
  const msgs = path.join(STORE_DIR, 'jetstream', '$G', 'streams', nats.bus.streamName('CONTACTS'), 'msgs');
  if (!existsSync(msgs))
    throw new Error(`the local NATS keeps its streams elsewhere: set TEST_NATS_STORE_DIR (${msgs})`);
  rmSync(msgs, { recursive: true, force: true });

  // 200 KB each: the first block fills at about 8 MB, and the server must then create a new block file.
  const pad = 'y'.repeat(200_000);
  // As the outbox relay does: a publish refused while the stream is being made again is tried again.
  const publish = async (i: number) => {
    for (const deadline = Date.now() + 10_000; ; await new Promise((r) => setTimeout(r, 50))) {
      const err = await nats.bus.publish('contacts.deleted', { contactId: `c${i}`, pad }, `loss-${i}`).catch((e) => e);
      if (!err || Date.now() > deadline) return err as Error | undefined;
    }
  };
  for (let i = 1; i <= 60; i++) expect(await publish(i)).toBeUndefined();

  expect(lines.filter((l) => l.event === 'nats.stream_remade')).toHaveLength(1);
  expect(refilled).toContainEqual(STREAMS.find((s) => s.name === 'CONTACTS')!.subjects);
  const jsm = await nats.raw.jetstreamManager();
  const info = await jsm.streams.info(nats.bus.streamName('CONTACTS'));
  const last = await jsm.streams.getMessage(nats.bus.streamName('CONTACTS'), { seq: info.state.last_seq });
  expect(last.json<{ contactId: string }>().contactId).toBe('c60');
  expect(nats.bus.connected()).toBe(true);
});
