/**
 * The seam DELETE /segments/{id} asks before deleting (SPEC.md: 409 while an active campaign uses
 * the segment): the campaigns service answers (campaigns-rpc.ts) with its SCHEDULED or SENDING
 * campaigns whose audience is the segment or whose filter tree references `segment.<id>`.
 */
export interface CampaignUsage {
  activeCampaignsUsing(projectId: string, segmentId: string): Promise<number>;
}
