import { closeTestRedis, openTestRedis, testKeyPrefix } from '@svc/lib/test-redis';
import { createLogger } from '@svc/lib/logger';
import { FailOpenRateLimiter, MemoryRateLimiter, RedisRateLimiter } from '@svc/lib/rate-limit';
import { RedisLink } from '@svc/lib/redis';
import { TrackingHits, type TrackingHitPolicy } from './tracking-hits.js';

const prefix = (name: string) => testKeyPrefix(`th-${name}`);
const POLICY: TrackingHitPolicy = {
  recordForMs: 0,
  openWindowMs: 60_000,
  clickWindowMs: 60_000,
  perClientPerMinute: 0,
};

let link: RedisLink;

beforeAll(async () => {
  link = await openTestRedis();
});

afterAll(() => closeTestRedis(link));

const local = (policy: Partial<TrackingHitPolicy> = {}) =>
  new TrackingHits(new MemoryRateLimiter(), { ...POLICY, ...policy });

describe('which opens and clicks are recorded', () => {
  test('one open per email per window; other emails are not affected', async () => {
    const h = local();
    expect(await h.recordOpen('e1', '1.2.3.4')).toBe(true);
    expect(await h.recordOpen('e1', '1.2.3.4')).toBe(false);
    expect(await h.recordOpen('e1', '5.6.7.8')).toBe(false);
    expect(await h.recordOpen('e2', '1.2.3.4')).toBe(true);
  });

  test('one click per (email, link) per window; an open does not count as a click', async () => {
    const h = local();
    expect(await h.recordOpen('e1', '')).toBe(true);
    expect(await h.recordClick('e1', 'https://a.example/', '')).toBe(true);
    expect(await h.recordClick('e1', 'https://a.example/', '')).toBe(false);
    expect(await h.recordClick('e1', 'https://b.example/', '')).toBe(true);
    expect(await h.recordClick('e2', 'https://a.example/', '')).toBe(true);
  });

  test('nothing is recorded past recordForMs after the token was issued; a token without iat has no age', async () => {
    const h = local({ recordForMs: 30 * 86_400_000 });
    const now = Date.now() / 1000;
    const aged = Math.floor(now - 31 * 86_400);
    expect(await h.recordOpen('old', '', aged)).toBe(false);
    expect(await h.recordClick('old', 'u', '', aged)).toBe(false);
    // The aged hits took no window: the email's first hit within the age is recorded.
    expect(await h.recordOpen('old', '', Math.floor(now - 29 * 86_400))).toBe(true);
    expect(await h.recordClick('old', 'u', '', Math.floor(now))).toBe(true);
    expect(await h.recordOpen('before-iat', '')).toBe(true);
    expect(await local().recordOpen('no-limit', '', aged)).toBe(true);
  });

  test('a window of 0 records every hit', async () => {
    const h = local({ openWindowMs: 0, clickWindowMs: 0 });
    expect([await h.recordOpen('e', ''), await h.recordOpen('e', '')]).toEqual([true, true]);
    expect([await h.recordClick('e', 'u', ''), await h.recordClick('e', 'u', '')]).toEqual([true, true]);
  });

  test('a mark expires with its window (a limit of 1 per window on its key)', async () => {
    const marks = new MemoryRateLimiter();
    const firstIn = async (now: number) => (await marks.hit('k', 1, 1000, now)).allowed;
    expect(await firstIn(0)).toBe(true);
    expect(await firstIn(999)).toBe(false);
    expect(await firstIn(1000)).toBe(true);
  });

  test('beyond its budget a client records nothing for any email; a repeat costs none', async () => {
    const h = local({ perClientPerMinute: 2 });
    expect(await h.recordOpen('e1', '1.2.3.4')).toBe(true);
    expect(await h.recordOpen('e1', '1.2.3.4')).toBe(false); // a repeat, not counted against the budget
    expect(await h.recordClick('e1', 'u', '1.2.3.4')).toBe(true);
    expect(await h.recordOpen('e2', '1.2.3.4')).toBe(false);
    expect(await h.recordOpen('e3', '5.6.7.8')).toBe(true);
  });

  test('with Redis the marks and the budget are shared by every replica', async () => {
    const p = prefix('shared');
    const replica = () => new TrackingHits(new RedisRateLimiter(link, p), { ...POLICY, perClientPerMinute: 2 });
    const [a, b] = [replica(), replica()];
    expect(await a.recordOpen('e1', '1.2.3.4')).toBe(true);
    expect(await b.recordOpen('e1', '1.2.3.4')).toBe(false);
    expect(await b.recordClick('e1', 'u', '1.2.3.4')).toBe(true);
    expect(await a.recordOpen('e2', '1.2.3.4')).toBe(false);
    const ttl = await link.client.pttl(`${p}:o:e1`);
    expect(ttl).toBeGreaterThan(0);
    // The bucket's key expires once it would be full again (the window), plus the token bucket's 1 s margin.
    expect(ttl).toBeLessThanOrEqual(61_000);
  });

  test('with Redis unreachable each replica deduplicates in-process and never fails', async () => {
    const dead = new RedisLink('redis://127.0.0.1:1', { commandTimeoutMs: 200, logger: createLogger('silent') });
    try {
      const p = prefix('dead');
      const h = new TrackingHits(new FailOpenRateLimiter(new RedisRateLimiter(dead, p)), {
        ...POLICY,
        perClientPerMinute: 5,
      });
      expect(await h.recordOpen('e1', '1.2.3.4')).toBe(true);
      expect(await h.recordOpen('e1', '1.2.3.4')).toBe(false);
      expect(await h.recordClick('e1', 'u', '1.2.3.4')).toBe(true);
    } finally {
      dead.disconnect();
    }
  });
});
