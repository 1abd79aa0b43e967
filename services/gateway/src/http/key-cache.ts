import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface KeyIdentity {
  projectId: string;
  kind: 'secret' | 'public';
  disabled: boolean;
}

/** Caches key -> project for a few seconds; keyed by the key's hash so no raw key is stored. */
export class KeyCache {
  private readonly memory = new Map<string, { value: KeyIdentity; expiresAt: number }>();

  constructor(private readonly ttlSeconds: number, private readonly redis?: Redis) {}

  private static id(key: string): string {
    return createHash('sha256').update(key).digest('hex');
  }

  async get(key: string): Promise<KeyIdentity | null> {
    if (this.ttlSeconds === 0) return null;
    const id = KeyCache.id(key);
    if (this.redis) {
      const raw = await this.redis.get(`keys:${id}`);
      return raw ? (JSON.parse(raw) as KeyIdentity) : null;
    }
    const hit = this.memory.get(id);
    if (!hit || hit.expiresAt < Date.now()) return null;
    return hit.value;
  }

  async set(key: string, value: KeyIdentity): Promise<void> {
    if (this.ttlSeconds === 0) return;
    const id = KeyCache.id(key);
    if (this.redis) {
      await this.redis.set(`keys:${id}`, JSON.stringify(value), 'EX', this.ttlSeconds);
      return;
    }
    if (this.memory.size > 10_000) this.memory.clear();
    this.memory.set(id, { value, expiresAt: Date.now() + this.ttlSeconds * 1000 });
  }
}
