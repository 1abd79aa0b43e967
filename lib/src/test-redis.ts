import { createLogger } from './logger.js';
import { RedisLink } from './redis.js';

/** For tests: the test Redis (TEST_REDIS_URL, else 127.0.0.1:6379). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix of one test's own (`test-<what>-<time><random>`): tests sharing the test Redis never meet. */
export const testKeyPrefix = (what: string) =>
  `test-${what}-${Date.now().toString(36)}${Math.floor(Math.random() * 1e6)}`;

/** A link to the test Redis, once it is connected (or after 5 s, for a test that sees Redis down). */
export async function openTestRedis(): Promise<RedisLink> {
  const link = new RedisLink(TEST_REDIS_URL, { commandTimeoutMs: 2000, logger: createLogger('silent') });
  for (let i = 0; i < 250 && !link.available; i++) await new Promise((r) => setTimeout(r, 20));
  return link;
}

/** Disconnects a link and waits until its connection has ended (jest then sees no open handle). */
export async function closeTestRedis(link: RedisLink): Promise<void> {
  const ended = new Promise((resolve) => link.client.once('end', resolve));
  link.disconnect();
  await ended;
}
