export type CampaignStatus = 'DRAFT' | 'SCHEDULED' | 'SENDING' | 'SENT' | 'CANCELLED';
export type CampaignType = 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS';
export type AudienceType = 'ALL' | 'SEGMENT' | 'FILTERED';

export interface CampaignRow {
  id: string;
  project_id: string;
  name: string;
  description: string;
  subject: string;
  body: string;
  from_email: string;
  from_name: string;
  reply_to: string;
  type: CampaignType;
  status: CampaignStatus;
  audience_type: AudienceType;
  segment_id: string | null;
  audience_condition: unknown | null;
  scheduled_for: Date | null;
  total_recipients: number;
  sent_count: number;
  delivered_count: number;
  opened_count: number;
  clicked_count: number;
  bounced_count: number;
  sent_at: Date | null;
  created_at: Date;
  updated_at: Date;
  run_at: Date | null;
  lease_until: Date | null;
  lease_token: string | null;
  snapshot_after: string | null;
  snapshot_done: boolean;
  last_error: string | null;
  /** Hand-over checkpoint (migration 002): every recipient with a contact id up to it was handed over. */
  handover_after: string | null;
  handover_queued: number;
  handover_withdrawn: number;
}

/** What a campaign says (create, replace, duplicate): the fields a client writes. */
export interface CampaignContent {
  name: string;
  description: string;
  subject: string;
  body: string;
  from_email: string;
  from_name: string;
  reply_to: string;
  type: CampaignType;
  audience_type: AudienceType;
  segment_id: string | null;
  audience_condition: unknown | null;
}
