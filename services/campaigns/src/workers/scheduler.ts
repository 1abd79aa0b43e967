import { DueWorkLoop } from '@svc/lib/due-work';
import type { Logger } from '@svc/lib/logger';
import type { FanOut } from '../domain/fan-out.js';
import type { CampaignRow } from '../store/campaign-row.js';
import { DUE_CHANNEL } from '../store/campaigns-store.js';
import type { FanOutStore } from '../store/fan-out-store.js';

export interface SchedulerOptions {
  /** Seconds a claim holds a campaign; a dead worker's campaign is taken over after this. */
  leaseSeconds: number;
  pollMs: number;
  /** Campaigns worked on at once by this process. */
  lanes: number;
}

/**
 * Starts due campaigns and carries sending ones forward: the shared due-work loop (NOTIFY wake,
 * poll, FOR UPDATE SKIP LOCKED claims under an expiring lease), one campaign per claim, each
 * claim one bounded slice of fan-out (fan-out.ts). Any number of replicas may run it.
 */
export async function startScheduler(store: FanOutStore, fanOut: FanOut, opts: SchedulerOptions, logger: Logger) {
  const loop = new DueWorkLoop<CampaignRow>({
    name: 'campaigns',
    logger,
    claim: (limit) => store.claim(limit, opts.leaseSeconds),
    run: async ([campaign]) => fanOut.run(campaign),
    batchSize: 1,
    lanes: opts.lanes,
    pollMs: opts.pollMs,
    notify: { pool: store.pool, channel: DUE_CHANNEL },
  });
  await loop.start();
  return {
    async stop() {
      fanOut.stop();
      await loop.stop();
    },
  };
}
