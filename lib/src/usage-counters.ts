import type { Logger } from './logger.js';
import { RedisLink, RedisUnavailableError } from './redis.js';

/** Answer of a capped add: `used` is the count before the add (the add happened only when `allowed`). */
export interface CappedAdd {
  allowed: boolean;
  used: number;
}

/**
 * Counters that are re-read from their source of truth now and then: a missing counter is
 * `undefined` and the caller seeds it (from a COUNT in its database) for `ttlMs`. The add is
 * capped and atomic: it happens only when the result stays within `cap`.
 */
export interface UsageCounters {
  /** undefined: the counter is not seeded (expired or never read). */
  addCapped(key: string, n: number, cap: number): Promise<CappedAdd | undefined>;
  /** Adds without a cap (work that already happened); a missing counter stays missing. */
  add(key: string, n: number): Promise<void>;
  /** Sets the counter unless another caller seeded it first. */
  seed(key: string, value: number, ttlMs: number): Promise<void>;
}

/** In-process counters: embedded mode, and the fallback while Redis is unreachable (one replica's view). */
export class MemoryUsageCounters implements UsageCounters {
  private readonly counters = new Map<string, { value: number; expiresAt: number }>();

  private live(key: string) {
    const c = this.counters.get(key);
    if (c && c.expiresAt <= Date.now()) this.counters.delete(key);
    return c && c.expiresAt > Date.now() ? c : undefined;
  }

  async addCapped(key: string, n: number, cap: number): Promise<CappedAdd | undefined> {
    const c = this.live(key);
    if (!c) return undefined;
    if (c.value + n > cap) return { allowed: false, used: c.value };
    c.value += n;
    return { allowed: true, used: c.value - n };
  }

  async add(key: string, n: number): Promise<void> {
    const c = this.live(key);
    if (c) c.value = Math.max(0, c.value + n);
  }

  async seed(key: string, value: number, ttlMs: number): Promise<void> {
    if (this.live(key)) return;
    if (this.counters.size >= 100_000) {
      const now = Date.now();
      for (const [k, c] of this.counters) if (c.expiresAt <= now) this.counters.delete(k);
    }
    this.counters.set(key, { value, expiresAt: Date.now() + ttlMs });
  }
}

// One round trip, atomic across replicas: add only when the result stays within the cap.
const ADD_CAPPED = `
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
v = tonumber(v)
if v + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return {0, v} end
redis.call('INCRBY', KEYS[1], ARGV[1])
return {1, v}
`;
const ADD = `if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end return 0`;

/**
 * Counters shared by every replica in Redis (keys `<prefix>:<key>`); while Redis is unreachable
 * each replica counts in-process (seeded from the database like a fresh counter).
 */
export class RedisUsageCounters implements UsageCounters {
  private readonly fallback = new MemoryUsageCounters();

  constructor(
    private readonly redis: RedisLink,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {}

  private async attempt<T>(op: () => Promise<T>, degraded: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (!(err instanceof RedisUnavailableError)) this.logger.debug({ err }, 'usage counter: redis failed');
      return degraded();
    }
  }

  addCapped(key: string, n: number, cap: number): Promise<CappedAdd | undefined> {
    return this.attempt(
      async () => {
        const r = (await this.redis.run((c) => c.eval(ADD_CAPPED, 1, `${this.prefix}:${key}`, n, cap))) as
          | number
          | [number, number];
        if (r === -1 || !Array.isArray(r)) return undefined;
        return { allowed: r[0] === 1, used: Number(r[1]) };
      },
      () => this.fallback.addCapped(key, n, cap),
    );
  }

  add(key: string, n: number): Promise<void> {
    return this.attempt(
      async () => {
        await this.redis.run((c) => c.eval(ADD, 1, `${this.prefix}:${key}`, n));
      },
      () => this.fallback.add(key, n),
    );
  }

  seed(key: string, value: number, ttlMs: number): Promise<void> {
    return this.attempt(
      async () => {
        await this.redis.run((c) => c.set(`${this.prefix}:${key}`, value, 'PX', ttlMs, 'NX'));
      },
      () => this.fallback.seed(key, value, ttlMs),
    );
  }
}

/** Redis counters when REDIS_URL is set (keys `<BUS_PREFIX>:billing:...`), else in-process. */
export function usageCountersFor(
  config: { redisUrl?: string; redisCommandTimeoutMs: number; busPrefix: string },
  logger: Logger,
): { counters: UsageCounters; close(): void } {
  if (!config.redisUrl) return { counters: new MemoryUsageCounters(), close: () => undefined };
  const link = new RedisLink(config.redisUrl, {
    commandTimeoutMs: config.redisCommandTimeoutMs,
    logger,
    degradedTo: 'billing caps counted per replica until it is back',
  });
  return { counters: new RedisUsageCounters(link, config.busPrefix, logger), close: () => link.disconnect() };
}
