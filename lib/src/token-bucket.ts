import { createHash } from 'node:crypto';
import { ReplyError, type Redis } from 'ioredis';
import type { RedisLink } from './redis.js';

/** A bucket of `capacity` tokens refilled continuously at `perMs` tokens per millisecond. */
export interface BucketShape {
  capacity: number;
  perMs: number;
}

export interface Grant {
  /** Tokens taken: up to the number asked for, fewer (maybe 0) when the bucket holds fewer. */
  granted: number;
  /** Whole tokens left in the bucket. */
  remaining: number;
  /** When fewer were granted than asked, milliseconds until the next token; else 0. */
  waitMs: number;
}

export interface TokenBuckets {
  /** Takes up to `want` tokens; a negative `want` gives `-want` back (never above capacity). */
  take(key: string, shape: BucketShape, want: number, now?: number): Promise<Grant>;
}

/**
 * The bucket rule, once in JavaScript (below) and once in Lua (Redis): refill since the last
 * take, capped at capacity; grant as many whole tokens as asked for and present (a negative
 * grant returns tokens, again capped at capacity).
 */
function settle(tokens: number, shape: BucketShape, want: number): Grant & { tokens: number } {
  const granted = Math.min(want, Math.floor(tokens));
  const left = Math.min(shape.capacity, tokens - granted);
  const waitMs = granted < want ? Math.ceil((1 - left) / shape.perMs) : 0;
  return { granted, remaining: Math.floor(left), waitMs, tokens: left };
}

/** In-process buckets: embedded mode, and the insurance when Redis is unreachable (one replica's view). */
export class MemoryTokenBuckets implements TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number; shape: BucketShape }>();

  async take(key: string, shape: BucketShape, want: number, now = Date.now()): Promise<Grant> {
    const b = this.buckets.get(key);
    const before = b ? Math.min(shape.capacity, b.tokens + Math.max(0, now - b.at) * shape.perMs) : shape.capacity;
    const g = settle(before, shape, want);
    if (!b && this.buckets.size >= 100_000) this.sweep(now);
    this.buckets.set(key, { tokens: g.tokens, at: now, shape });
    return { granted: g.granted, remaining: g.remaining, waitMs: g.waitMs };
  }

  /** Full buckets carry no information (a missing bucket is full): drop them. */
  private sweep(now: number): void {
    for (const [k, b] of this.buckets) {
      if (b.tokens + (now - b.at) * b.shape.perMs >= b.shape.capacity) this.buckets.delete(k);
    }
  }
}

// One round trip per decision, atomic: the script reads, refills, grants and writes in Redis, on
// Redis's clock (TIME), so replicas with skewed clocks share one fair bucket. The key expires
// once the bucket would be full again: a missing key is a full bucket.
const TAKE_SCRIPT = `
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(state[1])
if tokens == nil then
  tokens = capacity
else
  tokens = math.min(capacity, tokens + math.max(0, now - tonumber(state[2])) * per_ms)
end
local granted = math.min(want, math.floor(tokens))
local left = math.min(capacity, tokens - granted)
local wait = 0
if granted < want then wait = math.ceil((1 - left) / per_ms) end
redis.call('HSET', KEYS[1], 't', tostring(left), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - left) / per_ms) + 1000)
return {granted, math.floor(left), wait}
`;
const TAKE_SHA = createHash('sha1').update(TAKE_SCRIPT).digest('hex');

async function runTake(r: Redis, key: string, args: string[]): Promise<[number, number, number]> {
  try {
    return (await r.evalsha(TAKE_SHA, 1, key, ...args)) as [number, number, number];
  } catch (err) {
    // A restarted (or flushed) Redis forgets scripts: send it once in full.
    if (!(err instanceof ReplyError) || !(err as Error).message.startsWith('NOSCRIPT')) throw err;
    return (await r.eval(TAKE_SCRIPT, 1, key, ...args)) as [number, number, number];
  }
}

/** Buckets in Redis shared by every replica; keys are `<prefix>:<key>` (the prefix names the deployment). */
export class RedisTokenBuckets implements TokenBuckets {
  constructor(
    private readonly redis: RedisLink,
    private readonly prefix: string,
  ) {}

  async take(key: string, shape: BucketShape, want: number): Promise<Grant> {
    const args = [String(shape.capacity), String(shape.perMs), String(want)];
    const [granted, remaining, waitMs] = await this.redis.run((r) => runTake(r, `${this.prefix}:${key}`, args));
    return { granted, remaining, waitMs };
  }
}

/**
 * Shared buckets that fall back to in-process ones while the shared store fails (Redis down, frozen or
 * erring): DESIGN.md decision 4, as FailOpenRateLimiter does for request budgets.
 */
export class FailOpenTokenBuckets implements TokenBuckets {
  constructor(
    private readonly shared: TokenBuckets,
    private readonly local: TokenBuckets = new MemoryTokenBuckets(),
  ) {}

  async take(key: string, shape: BucketShape, want: number, now?: number): Promise<Grant> {
    try {
      return await this.shared.take(key, shape, want, now);
    } catch {
      return this.local.take(key, shape, want, now);
    }
  }
}
