import type { Pool } from './db.js';
import { logPassFailure } from './dependency-errors.js';
import { dueWorkAbandoned, dueWorkMetrics } from './metrics.js';
import type { Logger } from './logger.js';
import { PgListener } from './pg-listener.js';
import { runInContext } from './request-context.js';

export interface DueWorkHooks {
  claimed?(count: number): void;
  finished?(count: number, ms: number): void;
  failed?(err: unknown): void;
}

export interface DueWorkOptions<T> {
  name: string;
  logger: Logger;
  /**
   * Claims up to `limit` due items, each under a lease that expires (`FOR UPDATE SKIP LOCKED`,
   * so replicas never take the same row). Returns what it claimed, best first.
   */
  claim(limit: number): Promise<T[]>;
  /** Does the work of a claimed batch. A throw is logged; the leases expire and the items are claimed again. */
  run(items: T[]): Promise<void>;
  batchSize?: number;
  /** Batches in flight at once; a full batch starts another lane, so a backlog drains in parallel. */
  lanes?: number;
  /**
   * Work that arrives as a stream (one NOTIFY per few rows) claimed in bigger batches: a lane waits this long
   * before its first claim, and a wake-up while a lane runs starts no other (that lane claims again when its
   * batch is done, and keeps on until nothing is due); only a full batch starts another lane. Unset: each
   * wake-up starts a lane at once while lanes are free.
   */
  gatherMs?: number;
  /** Fallback poll: finds work queued by other replicas and work that became due with time. */
  pollMs: number;
  /** Wakes the loop at once when a statement does `NOTIFY <channel>` (or `pg_notify`). */
  notify?: { pool: Pool; channel: string };
  /** Puts items whose lease expired (their worker died) back in the queue; run at start and every `everyMs`. */
  reclaim?: { everyMs: number; run(): Promise<number> };
  hooks?: DueWorkHooks;
}

/**
 * The one loop for due work kept in PostgreSQL rows (email queue, import and bulk jobs,
 * domain checks): wake on NOTIFY, poll as fallback, claim with a lease, re-claim expired
 * leases, run in lanes, stop gracefully after the batches in flight.
 */
export class DueWorkLoop<T> {
  private pollTimer?: NodeJS.Timeout;
  private reclaimTimer?: NodeJS.Timeout;
  private listener?: PgListener;
  private readonly running = new Set<Promise<void>>();
  private wanted = false;
  private stopped = false;
  /** Prometheus counters of this loop (lib/metrics.ts), by its name; the caller's hooks run too. */
  private readonly metrics: Required<DueWorkHooks>;

  constructor(private readonly opts: DueWorkOptions<T>) {
    this.metrics = dueWorkMetrics(opts.name);
  }

  async start(): Promise<void> {
    const { notify, reclaim, logger, name } = this.opts;
    if (notify) {
      this.listener = new PgListener(notify.pool, notify.channel, () => this.kick(), logger.child({ part: name }));
      await this.listener.start();
    }
    if (reclaim) {
      const sweep = () =>
        reclaim.run().catch((err) => logPassFailure(logger, err, { loop: name }, 'lease sweep failed; will retry'));
      await sweep();
      this.reclaimTimer = setInterval(sweep, reclaim.everyMs);
    }
    this.pollTimer = setInterval(() => this.kick(), this.opts.pollMs);
    this.kick();
  }

  /** Starts a lane if one is free; a kick while every lane runs (or, with gatherMs, while any runs) is remembered. */
  kick(): void {
    this.startLane(this.opts.gatherMs ? 1 : (this.opts.lanes ?? 1));
  }

  private startLane(lanes: number): void {
    if (this.stopped) return;
    if (this.running.size >= lanes) {
      this.wanted = true;
      return;
    }
    // A lane serves whoever is due, not the request that kicked it: it runs outside any request context.
    const lane: Promise<void> = runInContext(undefined, () => this.drain())
      .catch((err) => {
        this.metrics.failed(err);
        this.opts.hooks?.failed?.(err);
        logPassFailure(this.opts.logger, err, { loop: this.opts.name }, 'due-work pass failed; will retry');
      })
      .finally(() => {
        this.running.delete(lane);
        if (this.wanted) {
          this.wanted = false;
          this.kick();
        }
      });
    this.running.add(lane);
  }

  private async drain(): Promise<void> {
    const size = this.opts.batchSize ?? 1;
    if (this.opts.gatherMs) await new Promise((resolve) => setTimeout(resolve, this.opts.gatherMs));
    while (!this.stopped) {
      const items = await this.opts.claim(size);
      if (!items.length) return;
      this.metrics.claimed(items.length);
      this.opts.hooks?.claimed?.(items.length);
      if (items.length === size) this.startLane(this.opts.lanes ?? 1);
      const started = performance.now();
      try {
        await this.opts.run(items);
      } catch (err) {
        dueWorkAbandoned(this.opts.name, items.length);
        throw err;
      }
      const ms = performance.now() - started;
      this.metrics.finished(items.length, ms);
      this.opts.hooks?.finished?.(items.length, ms);
    }
  }

  /** No new claims; resolves when the batches in flight are done. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.reclaimTimer) clearInterval(this.reclaimTimer);
    await Promise.allSettled([...this.running]);
    await this.listener?.stop();
  }
}
