/**
 * The seam DELETE /segments/{id} asks before deleting (SPEC.md: 409 while an active campaign uses
 * the segment). There is no campaigns service yet, so nothing uses a segment; the campaigns issue
 * replaces `noCampaigns` with an RPC to campaigns (SCHEDULED or SENDING campaigns with this segmentId).
 */
export interface CampaignUsage {
  activeCampaignsUsing(projectId: string, segmentId: string): Promise<number>;
}

export const noCampaigns: CampaignUsage = {
  activeCampaignsUsing: async () => 0,
};
