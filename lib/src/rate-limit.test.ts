import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createLogger } from './logger.js';
import { FailOpenRateLimiter, MemoryRateLimiter, RedisRateLimiter, SlicedRateLimiter } from './rate-limit.js';
import { RedisLink } from './redis.js';
import { MemoryTokenBuckets, RedisTokenBuckets, type BucketShape, type TokenBuckets } from './token-bucket.js';

/** The test Redis (127.0.0.1:6379); every test uses its own key prefix. */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = (name: string) => `test-rl-${name}-${Date.now().toString(36)}${Math.floor(Math.random() * 1e6)}`;
const HOUR = 3_600_000;

let link: RedisLink;
let inspect: Redis;

async function until<T>(what: string, probe: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  link = new RedisLink(REDIS_URL, { commandTimeoutMs: 2000, logger: createLogger('silent') });
  inspect = new Redis(REDIS_URL, { lazyConnect: true });
  await until('redis', () => (link.available ? true : undefined));
});

/** Disconnects and waits for the socket to be gone, so jest exits at once. */
async function close(l: RedisLink): Promise<void> {
  const ended = new Promise((resolve) => l.client.once('end', resolve));
  l.disconnect();
  await ended;
}

afterAll(async () => {
  await close(link);
  await inspect.quit();
});

/** The Redis buckets, counting the round trips a limiter makes. */
function countedBuckets(p: string): TokenBuckets & { takes: number } {
  const redisBuckets = new RedisTokenBuckets(link, p);
  const counted = {
    takes: 0,
    take: (key: string, shape: BucketShape, want: number) => {
      counted.takes++;
      return redisBuckets.take(key, shape, want);
    },
  };
  return counted;
}

describe('a replica slice of the shared budget', () => {
  test('two replicas spend exactly the shared budget, in chunks of 1%: one Redis take per 10 requests', async () => {
    const p = prefix('slice');
    const buckets = countedBuckets(p);
    const replicas = [new SlicedRateLimiter(buckets), new SlicedRateLimiter(buckets)];
    // 1000 per 1000 hours: no token comes back during the test, however slow the machine is.
    const decisions = await Promise.all(
      Array.from({ length: 1200 }, (_, i) => replicas[i % 2].hit('track:p', 1000, 1000 * HOUR)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(1000);
    // 100 chunks of 10, then one refused take per replica; later refusals are answered without Redis.
    expect(buckets.takes).toBe(102);
    const refused = decisions.find((d) => !d.allowed)!;
    expect(refused).toMatchObject({ limit: 1000, remaining: 0 });
    expect(refused.retryAfter).toBeGreaterThan(3000);
    expect(refused.retryAfter).toBeLessThanOrEqual(3600); // one token an hour
    expect((await replicas[0].hit('track:p', 1000, 1000 * HOUR)).allowed).toBe(false);
    expect(buckets.takes).toBe(102);
  });

  test('the answer reports what the shared bucket holds (tokens a replica took count as spent)', async () => {
    const p = prefix('slice-remaining');
    const limiter = new SlicedRateLimiter(new RedisTokenBuckets(link, p));
    expect(await limiter.hit('api:a', 1000, HOUR)).toMatchObject({ allowed: true, limit: 1000, remaining: 990 });
    expect(Math.floor(Number(await inspect.hget(`${p}:api:a`, 't')))).toBe(990);
    // Budgets under 200 are taken one token at a time: exact, as without slices.
    for (const left of [2, 1, 0]) expect((await limiter.hit('api:b', 3, HOUR)).remaining).toBe(left);
    expect((await limiter.hit('api:b', 3, HOUR)).allowed).toBe(false);
  });
});

describe('Redis token-bucket limiter', () => {
  test('200 concurrent hits on a budget of 50 allow exactly 50', async () => {
    const limiter = new RedisRateLimiter(link, prefix('race'));
    const decisions = await Promise.all(Array.from({ length: 200 }, () => limiter.hit('project:p', 50, HOUR)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(50);
    const remaining = decisions.filter((d) => d.allowed).map((d) => d.remaining);
    expect(new Set(remaining).size).toBe(50);
    const refused = decisions.find((d) => !d.allowed)!;
    expect(refused).toMatchObject({ limit: 50, remaining: 0 });
    // One token of an hourly budget of 50 comes back in 72 s.
    expect(refused.retryAfter).toBeGreaterThan(60);
    expect(refused.retryAfter).toBeLessThanOrEqual(72);
  });

  test('keys live under the prefix, expire once the bucket would be full, and budgets are per key', async () => {
    const p = prefix('keys');
    const limiter = new RedisRateLimiter(link, p);
    expect((await limiter.hit('api:a', 2, 60_000)).remaining).toBe(1);
    expect((await limiter.hit('api:a', 2, 60_000)).remaining).toBe(0);
    expect((await limiter.hit('api:a', 2, 60_000)).allowed).toBe(false);
    expect((await limiter.hit('track:a', 2, 60_000)).allowed).toBe(true);
    expect((await inspect.keys(`${p}:*`)).sort()).toEqual([`${p}:api:a`, `${p}:track:a`]);
    const ttl = await inspect.pttl(`${p}:api:a`);
    expect(ttl).toBeGreaterThan(30_000);
    expect(ttl).toBeLessThanOrEqual(61_000);
  });

  test('a Redis that forgot the script (restart, SCRIPT FLUSH) is sent it again', async () => {
    const buckets = new RedisTokenBuckets(link, prefix('noscript'));
    const shape = { capacity: 10, perMs: 10 / HOUR };
    expect((await buckets.take('k', shape, 4)).granted).toBe(4);
    await inspect.script('FLUSH');
    expect(await buckets.take('k', shape, 10)).toMatchObject({ granted: 6, remaining: 0 });
  });

  test('a partial grant says how long until the next token', async () => {
    const buckets = new RedisTokenBuckets(link, prefix('partial'));
    const g = await buckets.take('k', { capacity: 3, perMs: 1 / 1000 }, 5);
    expect(g.granted).toBe(3);
    expect(g.waitMs).toBeGreaterThan(900);
    expect(g.waitMs).toBeLessThanOrEqual(1000);
  });

  test('a negative take gives tokens back, never above capacity (Redis and in-process alike)', async () => {
    for (const buckets of [new RedisTokenBuckets(link, prefix('give')), new MemoryTokenBuckets()]) {
      const shape = { capacity: 3, perMs: 3 / HOUR };
      expect((await buckets.take('k', shape, 3)).remaining).toBe(0);
      expect((await buckets.take('k', shape, -1)).remaining).toBe(1);
      expect((await buckets.take('k', shape, -5)).remaining).toBe(3);
      expect((await buckets.take('k', shape, 4)).granted).toBe(3);
    }
  });
});

describe('in-process limiter', () => {
  test('a burst of the budget, then one request per refilled token', async () => {
    const limiter = new MemoryRateLimiter();
    for (let i = 0; i < 5; i++) expect((await limiter.hit('k', 5, 60_000, 0)).allowed).toBe(true);
    expect(await limiter.hit('k', 5, 60_000, 1000)).toMatchObject({ allowed: false, remaining: 0, retryAfter: 11 });
    expect((await limiter.hit('k', 5, 60_000, 12_000)).allowed).toBe(true);
    expect((await limiter.hit('k', 5, 60_000, 12_001)).allowed).toBe(false);
    expect((await limiter.hit('other', 5, 60_000, 12_001)).remaining).toBe(4);
  });

  test('memory buckets never hold more than their capacity', async () => {
    const buckets = new MemoryTokenBuckets();
    const shape = { capacity: 2, perMs: 1 };
    expect((await buckets.take('k', shape, 2, 0)).granted).toBe(2);
    expect(await buckets.take('k', shape, 5, 1_000_000)).toMatchObject({ granted: 2, remaining: 0, waitMs: 1 });
  });
});

describe('fail-open', () => {
  test('with Redis unreachable, requests are counted in-process and the outage is one warning', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(s) });
    const dead = new RedisLink('redis://127.0.0.1:1', { commandTimeoutMs: 200, logger, degradedTo: 'in-process' });
    try {
      const limiter = new FailOpenRateLimiter(new RedisRateLimiter(dead, prefix('dead')));
      const decisions = [];
      for (let i = 0; i < 4; i++) decisions.push(await limiter.hit('project:p', 3, 60_000));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
      expect(decisions[3].retryAfter).toBeGreaterThan(0);
      await until('the warning', () => (lines.length ? true : undefined));
      for (let i = 0; i < 3; i++) await limiter.hit('project:q', 3, 60_000);
      const warnings = lines.map((l) => JSON.parse(l)).filter((l) => l.dependency === 'redis');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, state: 'down', msg: 'redis down: in-process' });
    } finally {
      dead.disconnect();
    }
  });
});
