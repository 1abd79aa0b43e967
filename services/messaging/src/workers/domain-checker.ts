import { DueWorkLoop } from '@svc/lib/due-work';
import type { Logger } from '@svc/lib/logger';
import type { SenderDomains } from '../domain/sender-domains.js';

/** SPEC.md: "A background check runs every 5 minutes" (DOMAIN_CHECK_INTERVAL_SECONDS). */
export async function startDomainChecker(
  domains: SenderDomains,
  intervalSeconds: number,
  logger: Logger,
): Promise<{ stop(): Promise<void> }> {
  const loop = new DueWorkLoop({
    name: 'domain-checker',
    logger,
    // Claiming stamps last_checked_at, which is the lease: a crashed check is due again after the interval.
    claim: (limit) => domains.claimDue(intervalSeconds, limit),
    run: (due) => domains.checkClaimed(due),
    batchSize: 50,
    // Ticks more often than the interval; each tick only claims the domains that are due.
    pollMs: Math.min(60_000, Math.max(1000, (intervalSeconds * 1000) / 5)),
  });
  await loop.start();
  return loop;
}
