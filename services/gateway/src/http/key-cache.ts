import { createHash } from 'node:crypto';
import type { RedisLink } from '@svc/lib/redis';

export interface KeyIdentity {
  projectId: string;
  kind: 'secret' | 'public';
  disabled: boolean;
}

/** In-process entries live at most this long, so the hot path skips Redis most of the time. */
const LOCAL_TTL_MS = 1000;
const LOCAL_MAX_ENTRIES = 10_000;

/**
 * Caches key -> project for a few seconds (a rotated key stops working within the TTL):
 * a one-second in-process layer in front of Redis (shared by gateway replicas), or the
 * in-process layer alone for the TTL when there is no Redis. Redis keys by the key's hash.
 * A Redis failure is a miss (the caller asks identity), never an error.
 */
export class KeyCache {
  private readonly local = new Map<string, { value: KeyIdentity; expiresAt: number }>();
  /** Counts forgetProject calls: see `mark`. */
  private forgets = 0;

  constructor(
    private readonly ttlSeconds: number,
    private readonly redis?: RedisLink,
    private readonly prefix = 'keys',
  ) {}

  private static id(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  async get(key: string): Promise<KeyIdentity | null> {
    if (this.ttlSeconds === 0) return null;
    // The in-process layer is keyed by the key itself (this process holds it anyway): a hit hashes nothing.
    const hit = this.local.get(key);
    if (hit && hit.expiresAt > Date.now()) return hit.value;
    if (!this.redis) return null;
    const id = KeyCache.id(key);
    const raw = await this.redis.run((r) => r.get(`${this.prefix}:${id}`)).catch(() => null);
    if (!raw) return null;
    const value = JSON.parse(raw) as KeyIdentity;
    this.remember(key, value, Math.min(LOCAL_TTL_MS, this.ttlSeconds * 1000));
    return value;
  }

  /**
   * Taken before asking identity about a key and passed to `set`: an answer that was looked up while a project's
   * keys were forgotten (rotated, deleted) may be the old one, and is not cached.
   */
  mark(): number {
    return this.forgets;
  }

  async set(key: string, value: KeyIdentity, mark = this.forgets): Promise<void> {
    if (this.ttlSeconds === 0 || mark !== this.forgets) return;
    const id = KeyCache.id(key);
    // Not awaited: the request already has its answer from identity.
    const raw = JSON.stringify(value);
    // The project's set of cached key ids lets forgetProject find them (it lives as long as its newest entry).
    const index = `${this.prefix}:project:${value.projectId}`;
    void this.redis
      ?.run((r) =>
        r
          .multi()
          .set(`${this.prefix}:${id}`, raw, 'EX', this.ttlSeconds)
          .sadd(index, id)
          .expire(index, this.ttlSeconds)
          .exec(),
      )
      .catch(() => undefined);
    this.remember(key, value, this.redis ? Math.min(LOCAL_TTL_MS, this.ttlSeconds * 1000) : this.ttlSeconds * 1000);
  }

  /**
   * Drops every cached key of a project (deleted, or its keys rotated), here and in Redis, so the
   * keys are asked of identity again at once instead of after the TTL.
   */
  async forgetProject(projectId: string): Promise<void> {
    this.forgets++;
    for (const [key, entry] of this.local) if (entry.value.projectId === projectId) this.local.delete(key);
    if (!this.redis) return;
    const index = `${this.prefix}:project:${projectId}`;
    await this.redis
      .run(async (r) => {
        const ids = await r.smembers(index);
        await r.del(index, ...ids.map((id) => `${this.prefix}:${id}`));
      })
      .catch(() => undefined);
  }

  private remember(key: string, value: KeyIdentity, ttlMs: number): void {
    if (this.local.size >= LOCAL_MAX_ENTRIES) this.local.clear();
    this.local.set(key, { value, expiresAt: Date.now() + ttlMs });
  }
}
