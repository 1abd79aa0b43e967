import type { Pool } from './db.js';
import type { Logger } from './logger.js';
import { PgListener } from './pg-listener.js';
import { SingleFlight } from './single-flight.js';

/**
 * A read-through cache of answers that change only when some tables change: a trigger on those
 * tables NOTIFYs `channel` (at commit), and every process listening forgets all its entries. While
 * the LISTEN connection is down nothing is kept, and a read that began before a notification is not
 * kept either, so a hit is never older than the last change this process was told about.
 */
export class NotifiedCache {
  private entries = new Map<string, unknown>();
  private generation = 0;
  private readonly listener: PgListener;
  /** Callers missing the same key together share one read. */
  private readonly loading = new SingleFlight<unknown>();

  constructor(
    pool: Pool,
    channel: string,
    logger: Logger,
    private readonly maxEntries = 10_000,
  ) {
    this.listener = new PgListener(pool, channel, () => this.clear(), logger);
  }

  start(): Promise<void> {
    return this.listener.start();
  }

  stop(): Promise<void> {
    this.clear();
    return this.listener.stop();
  }

  clear(): void {
    this.generation++;
    this.entries = new Map();
    this.loading.forget();
  }

  /** The answer kept under `key`, if one is (no read): for a caller that can skip work on a known answer. */
  peek(key: string): unknown {
    return this.entries.get(key);
  }

  /** The answer kept under `key`, or `load`'s (one cache can hold several kinds: prefix their keys). */
  async get<V>(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit as V;
    return this.loading.run(key, async () => {
      const generation = this.generation;
      const value = await load();
      if (generation === this.generation && this.listener.listening) {
        if (this.entries.size >= this.maxEntries) this.entries = new Map();
        this.entries.set(key, value);
      }
      return value;
    }) as Promise<V>;
  }
}
