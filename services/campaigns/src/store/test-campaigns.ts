import { randomUUID } from 'node:crypto';
import type { CampaignContent } from './campaign-row.js';
import type { CampaignsStore } from './campaigns-store.js';

/** A MARKETING campaign to ALL with the least content, moved to SENDING: what fan-out and counter tests start from. */
export async function insertSendingCampaign(campaigns: CampaignsStore, projectId: string): Promise<string> {
  const id = randomUUID();
  const content: CampaignContent = {
    name: 'c',
    description: '',
    subject: 's',
    body: 'b',
    from_email: 'a@x.test',
    from_name: '',
    reply_to: '',
    type: 'MARKETING',
    audience_type: 'ALL',
    segment_id: null,
    audience_condition: null,
  };
  await campaigns.insert(id, projectId, content);
  await campaigns.sendNow(campaigns.pool, projectId, id, content);
  return id;
}
