import { AppError } from './errors.js';
import type { RedisLink } from './redis.js';

export interface StoredResponse {
  status: number;
  body: string;
  contentType?: string;
}

export interface IdempotencyRecord {
  fingerprint: string;
  method: string;
  path: string;
  startedAt: string;
  response?: StoredResponse;
}

/** SPEC.md: 409 IDEMPOTENCY_KEY_REUSED names the request that first used the key (gateway and messaging). */
export function idempotencyKeyReused(
  key: string,
  original: { method: string; path: string; startedAt: string; status: number | null },
): AppError {
  return new AppError({
    code: 'IDEMPOTENCY_KEY_REUSED',
    status: 409,
    message: 'This Idempotency-Key was already used for a different request',
    details: {
      key,
      originalRequest: { method: original.method, path: original.path },
      originalRequestAt: original.startedAt,
      originalStatusCode: original.status,
    },
  });
}

/**
 * Claim-then-complete store: `claim` succeeds for exactly one of concurrent duplicates. A claim
 * lives only `claimTtlSeconds` (a crash or a failed `complete` must not block the key for the
 * whole TTL); `complete` keeps the answer for the full TTL.
 */
export interface IdempotencyStore {
  /** Returns null when this caller now owns the key, else the record already there. */
  claim(key: string, record: IdempotencyRecord, claimTtlSeconds: number): Promise<IdempotencyRecord | null>;
  complete(key: string, record: IdempotencyRecord, ttlSeconds: number): Promise<void>;
  release(key: string): Promise<void>;
  get(key: string): Promise<IdempotencyRecord | null>;
}

export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly redis: RedisLink,
    private readonly prefix = 'idem',
  ) {}

  async claim(key: string, record: IdempotencyRecord, claimTtlSeconds: number): Promise<IdempotencyRecord | null> {
    const k = `${this.prefix}:${key}`;
    const ok = await this.redis.run((r) => r.set(k, JSON.stringify(record), 'EX', claimTtlSeconds, 'NX'));
    if (ok === 'OK') return null;
    return (await this.get(key)) ?? this.claim(key, record, claimTtlSeconds);
  }

  async complete(key: string, record: IdempotencyRecord, ttlSeconds: number): Promise<void> {
    await this.redis.run((r) => r.set(`${this.prefix}:${key}`, JSON.stringify(record), 'EX', ttlSeconds));
  }

  async release(key: string): Promise<void> {
    await this.redis.run((r) => r.del(`${this.prefix}:${key}`));
  }

  async get(key: string): Promise<IdempotencyRecord | null> {
    const raw = await this.redis.run((r) => r.get(`${this.prefix}:${key}`));
    return raw ? (JSON.parse(raw) as IdempotencyRecord) : null;
  }
}

export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, { record: IdempotencyRecord; expiresAt: number }>();

  async claim(key: string, record: IdempotencyRecord, claimTtlSeconds: number): Promise<IdempotencyRecord | null> {
    const existing = await this.get(key);
    if (existing) return existing;
    this.entries.set(key, { record, expiresAt: Date.now() + claimTtlSeconds * 1000 });
    return null;
  }

  async complete(key: string, record: IdempotencyRecord, ttlSeconds: number): Promise<void> {
    this.entries.set(key, { record, expiresAt: Date.now() + ttlSeconds * 1000 });
  }

  async release(key: string): Promise<void> {
    this.entries.delete(key);
  }

  async get(key: string): Promise<IdempotencyRecord | null> {
    const e = this.entries.get(key);
    if (!e) return null;
    if (e.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return null;
    }
    return e.record;
  }
}
