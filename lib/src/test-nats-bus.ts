import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from 'nats';
import { STREAMS } from './bus.js';
import { NatsBus } from './bus-nats.js';
import { capturingLogger } from './test-logger.js';

/** Polls `ok` every 20 ms until it holds or `ms` pass; answers its last value. */
export async function until(ok: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return ok();
}

/**
 * For tests: a NatsBus on the local NATS (TEST_NATS_URL) under a prefix of its own, connected before the file's
 * tests, with a raw connection beside it; closed after them, its streams deleted. Call at the top of a test file.
 */
export function natsBusFixture(prefixWord: string, name: string) {
  const url = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
  const { logger, lines } = capturingLogger();
  const prefix = `${prefixWord}${randomBytes(4).toString('hex')}`;
  const fixture = {
    url,
    prefix,
    logger,
    lines,
    bus: undefined as unknown as NatsBus,
    raw: undefined as unknown as NatsConnection,
  };
  beforeAll(async () => {
    fixture.bus = NatsBus.start(url, prefix, name, logger);
    fixture.raw = await connect({ servers: url });
    expect(await until(() => fixture.bus.connected())).toBe(true);
  });
  afterAll(async () => {
    await fixture.bus?.close();
    if (fixture.raw) {
      const jsm = await fixture.raw.jetstreamManager();
      for (const s of STREAMS) await jsm.streams.delete(fixture.bus.streamName(s.name)).catch(() => undefined);
      await fixture.raw.close();
    }
  });
  return fixture;
}
