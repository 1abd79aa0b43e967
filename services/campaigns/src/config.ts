import { z } from 'zod';
import { envPositiveInt, type Config } from '@svc/lib/config';

/** The campaigns service's own environment variables (the platform-wide ones are in lib/src/config.ts). */
export const campaignsEnv = z
  .object({
    /** Recipients per QueueEmails call. */
    CAMPAIGN_BATCH_SIZE: envPositiveInt.max(1000).default(500),
    /** Recipients handed over to messaging but not yet sent or bounced, per campaign (cancel stops within it). */
    CAMPAIGN_SEND_WINDOW: envPositiveInt.default(4000),
    /** Seconds a replica holds a campaign it works on; a crashed replica's campaign resumes after this. */
    CAMPAIGN_LEASE_SECONDS: envPositiveInt.default(30),
    /** How often the scheduler looks for due campaigns (a send-now wakes it at once). */
    CAMPAIGN_POLL_MS: envPositiveInt.default(250),
  })
  .transform((e) => ({
    campaignBatchSize: e.CAMPAIGN_BATCH_SIZE,
    campaignSendWindow: e.CAMPAIGN_SEND_WINDOW,
    campaignLeaseSeconds: e.CAMPAIGN_LEASE_SECONDS,
    campaignPollMs: e.CAMPAIGN_POLL_MS,
  }));

export type CampaignsEnv = z.output<typeof campaignsEnv>;
export type CampaignsConfig = Config & CampaignsEnv;
