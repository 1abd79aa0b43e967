import type { Logger } from '@svc/lib/logger';
import type { SenderDomains } from '../domain/sender-domains.js';

/** SPEC.md: "A background check runs every 5 minutes" (DOMAIN_CHECK_INTERVAL_SECONDS). */
export function startDomainChecker(domains: SenderDomains, intervalSeconds: number, logger: Logger): { stop(): Promise<void> } {
  let running: Promise<unknown> | undefined;
  // Ticks more often than the interval; each tick only claims the domains that are due.
  const tickMs = Math.min(60_000, Math.max(1000, (intervalSeconds * 1000) / 5));
  const timer = setInterval(() => {
    if (running) return;
    running = domains
      .checkDue(intervalSeconds)
      .catch((err) => logger.warn({ err }, 'domain check pass failed'))
      .finally(() => {
        running = undefined;
      });
  }, tickMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
