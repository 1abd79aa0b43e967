import type { Pool } from '@svc/lib/db';
import { DueWorkLoop } from '@svc/lib/due-work';
import type { Logger } from '@svc/lib/logger';
import { JOBS_CHANNEL } from '../store/jobs-store.js';

/** One kind of job: claim the oldest queued one under a lease, then run it. */
export interface JobKind<T> {
  name: string;
  claim(): Promise<T | null>;
  run(job: T): Promise<void>;
}

/**
 * The contacts service's background jobs (CSV imports, bulk operations), each kind on the
 * platform's due-work loop: woken by NOTIFY from any replica, polled as a fallback, one job at a
 * time per kind, and a job whose worker died is queued again once its lease runs out.
 */
export class JobRunner {
  private readonly loops: DueWorkLoop<unknown>[];

  constructor(pool: Pool, kinds: JobKind<any>[], reclaim: () => Promise<number>, logger: Logger, pollMs = 1000) {
    this.loops = kinds.map(
      (kind, i) =>
        new DueWorkLoop<unknown>({
          name: `jobs-${kind.name}`,
          logger,
          claim: async () => {
            const job = await kind.claim();
            return job === null ? [] : [job];
          },
          run: ([job]) => kind.run(job),
          pollMs,
          notify: { pool, channel: JOBS_CHANNEL },
          // One sweep covers every kind's table.
          ...(i === 0 ? { reclaim: { everyMs: 30_000, run: reclaim } } : {}),
        }),
    );
  }

  async start(): Promise<void> {
    for (const loop of this.loops) await loop.start();
  }

  kick(): void {
    for (const loop of this.loops) loop.kick();
  }

  async stop(): Promise<void> {
    await Promise.all(this.loops.map((loop) => loop.stop()));
  }
}
