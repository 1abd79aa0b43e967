import { closeTestRedis, openTestRedis, testKeyPrefix } from '@svc/lib/test-redis';
import { createLogger } from '@svc/lib/logger';
import { RedisLink } from '@svc/lib/redis';
import { RedisTokenBuckets, type TokenBuckets } from '@svc/lib/token-bucket';
import { ProjectThrottle, SharedProjectThrottle } from './throttle.js';

const prefix = (name: string) => testKeyPrefix(`send-${name}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let link: RedisLink;

beforeAll(async () => {
  link = await openTestRedis();
});

afterAll(() => closeTestRedis(link));

describe('per-project throttle', () => {
  test('allows the rate per second, then asks to wait; projects do not share a bucket', async () => {
    const t = new ProjectThrottle(2);
    expect(t.take('p', 0)).toBe(0);
    expect(t.take('p', 0)).toBe(0);
    expect(t.take('p', 0)).toBe(500);
    expect(t.take('q', 0)).toBe(0);
    expect(t.take('p', 500)).toBe(0);
    const many = new ProjectThrottle(3);
    expect(await many.takeMany('p', 5, 0)).toEqual({ granted: 3, waitMs: 334 });
  });
});

describe('shared throttle (Redis)', () => {
  test('two replicas at 10/s send about 10/s together, not 20', async () => {
    const buckets = new RedisTokenBuckets(link, prefix('two'));
    // Chunks of 5: tokens a replica holds still count against the shared budget.
    const replicas = [0, 1].map(() => new SharedProjectThrottle(buckets, 10, undefined, 5));
    const sent = [0, 0];
    const started = Date.now();
    const end = started + 1500;
    await Promise.all(
      replicas.map(async (t, i) => {
        while (Date.now() < end) {
          const wait = await t.take('project');
          if (wait === 0) sent[i]++;
          else await sleep(Math.min(wait, 50));
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    const total = sent[0] + sent[1];
    // One second of burst (10) plus 10 per second: alone, each replica would have allowed that much.
    expect(total).toBeGreaterThanOrEqual(10);
    expect(total).toBeLessThanOrEqual(10 + Math.ceil(10 * seconds) + 1);
  });

  test('tokens come from Redis in chunks: one round trip per ten messages', async () => {
    const real = new RedisTokenBuckets(link, prefix('chunks'));
    let trips = 0;
    const counted: TokenBuckets = {
      take: (key, shape, want) => {
        trips++;
        return real.take(key, shape, want);
      },
    };
    const t = new SharedProjectThrottle(counted, 100);
    const waits = [];
    for (let i = 0; i < 50; i++) waits.push(await t.take('project'));
    expect(waits.every((w) => w === 0)).toBe(true);
    expect(trips).toBe(5);
  });

  test('a claimed batch takes its tokens in one round trip: what the bucket lacks waits', async () => {
    const real = new RedisTokenBuckets(link, prefix('many'));
    let trips = 0;
    const counted: TokenBuckets = {
      take: (key, shape, want) => {
        trips++;
        return real.take(key, shape, want);
      },
    };
    const t = new SharedProjectThrottle(counted, 100);
    expect(await t.takeMany('project', 60)).toEqual({ granted: 60, waitMs: 0 });
    expect(trips).toBe(1);
    const rest = await t.takeMany('project', 60); // one second of burst: 40 are left
    expect(rest.granted).toBeGreaterThanOrEqual(40);
    expect(rest.granted).toBeLessThan(60);
    expect(rest.waitMs).toBeGreaterThan(0);
    expect(trips).toBe(2);
  });

  test('with Redis unreachable the in-process throttle decides', async () => {
    const dead = new RedisLink('redis://127.0.0.1:1', { commandTimeoutMs: 200, logger: createLogger('silent') });
    try {
      const t = new SharedProjectThrottle(new RedisTokenBuckets(dead, prefix('dead')), 3);
      const waits = [];
      for (let i = 0; i < 4; i++) waits.push(await t.take('project'));
      expect(waits.slice(0, 3)).toEqual([0, 0, 0]);
      expect(waits[3]).toBeGreaterThan(0);
    } finally {
      dead.disconnect();
    }
  });
});
