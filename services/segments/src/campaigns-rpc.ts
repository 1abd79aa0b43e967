import type { Client } from '@connectrpc/connect';
import type { CampaignsService } from '@svc/proto/svc/campaigns/v1/campaigns_pb';
import type { CampaignUsage } from './domain/campaign-usage.js';

/** The campaigns service as the segments domain's CampaignUsage: SCHEDULED or SENDING campaigns using a segment. */
export function campaignUsage(campaigns: Client<typeof CampaignsService>): CampaignUsage {
  return {
    async activeCampaignsUsing(projectId, segmentId) {
      const r = await campaigns.listCampaignsUsing({ projectId, segmentId, activeOnly: true });
      return r.campaigns.length;
    },
  };
}
