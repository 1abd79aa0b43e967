import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { type BillingCategory, BillingCaps, type BillingLimits } from './billing-caps.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { createRpcClient } from './rpc-client.js';
import { usageCountersFor } from './usage-counters.js';

/**
 * The billing caps of a service that enforces them: caps read from identity (cached a few seconds),
 * counters in Redis when REDIS_URL is set, seeded by `used` (a COUNT of the service's own records).
 */
export function billingCapsFromIdentity(
  config: Config,
  logger: Logger,
  used: (projectId: string, category: BillingCategory, since: Date) => Promise<number>,
): { caps: BillingCaps; close(): void } {
  const identity = createRpcClient(IdentityService, config.rpcUrls.identity, config);
  const counters = usageCountersFor(config, logger);
  const caps = new BillingCaps({
    async limits(projectId) {
      const l = (await identity.getProjectBillingLimits({ projectId })).limits;
      const out: BillingLimits = {};
      if (l?.emails !== undefined) out.emails = Number(l.emails);
      if (l?.contacts !== undefined) out.contacts = Number(l.contacts);
      if (l?.events !== undefined) out.events = Number(l.events);
      return out;
    },
    used,
    counters: counters.counters,
    logger,
  });
  return { caps, close: counters.close };
}
