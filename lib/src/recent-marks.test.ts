import { closeTestRedis, openTestRedis, testKeyPrefix } from './test-redis.js';
import { FailOpenRecentMarks, MemoryRecentMarks, RedisRecentMarks } from './recent-marks.js';
import type { RedisLink } from './redis.js';

const prefix = (name: string) => testKeyPrefix(`rm-${name}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let link: RedisLink;

beforeAll(async () => {
  link = await openTestRedis();
});

afterAll(() => closeTestRedis(link));

describe('short-lived marks', () => {
  test('a swap answers the previous value while it lives; every swap restarts the time', async () => {
    const m = new MemoryRecentMarks();
    expect(await m.swap('k', 'a', 1000, 0)).toBeUndefined();
    expect(await m.swap('k', 'b', 1000, 900)).toBe('a');
    // 1,800 ms after the first swap, 900 after the last: still alive (the window slides).
    expect(await m.swap('k', 'c', 1000, 1800)).toBe('b');
    expect(await m.swap('k', 'd', 1000, 2800)).toBeUndefined();
    expect(await m.swap('other', 'x', 1000, 2800)).toBeUndefined();
  });

  test('in Redis: shared by replicas, answers the previous value, expires with its time', async () => {
    const p = prefix('redis');
    const [one, two] = [new RedisRecentMarks(link, p), new RedisRecentMarks(link, p)];
    expect(await one.swap('k', 'a', 60_000)).toBeUndefined();
    expect(await two.swap('k', 'b', 60_000)).toBe('a');
    expect(await one.swap('short', 'a', 1)).toBeUndefined();
    let after: string | undefined = 'a';
    for (let i = 0; i < 100 && after !== undefined; i++) {
      await sleep(10);
      after = await one.swap('short', 'b', 1);
    }
    expect(after).toBeUndefined();
  });

  test('while Redis fails the marks are kept in-process', async () => {
    const failing = {
      swap: async (): Promise<string | undefined> => {
        throw new Error('down');
      },
    };
    const m = new FailOpenRecentMarks(failing);
    expect(await m.swap('k', 'a', 60_000)).toBeUndefined();
    expect(await m.swap('k', 'b', 60_000)).toBe('a');
  });
});
