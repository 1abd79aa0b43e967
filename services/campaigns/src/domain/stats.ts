import type { CampaignRow, CampaignStatus } from '../store/campaign-row.js';
import type { RecipientCounts } from '../store/recipients-store.js';

export interface CampaignStatsView {
  campaignId: string;
  name: string;
  status: CampaignStatus;
  sentAt: Date | null;
  createdAt: Date;
  totalRecipients: number;
  pending: number;
  queued: number;
  suppressed: number;
  failed: number;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  openRate: number;
  clickRate: number;
  deliveryRate: number;
  bounceRate: number;
  lastError: string;
}

/** A percentage with two decimals; 0 when there is nothing to divide by. */
export const rate = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 100 : 0);

/**
 * Counters from the campaign row (kept by the lifecycle consumer: opens and clicks unique per
 * recipient) and the hand-over breakdown from the recipient rows. Rates are percentages of
 * sentCount; the bounce rate is of totalRecipients (an address refused at SMTP time is never "sent").
 */
export function campaignStats(c: CampaignRow, counts?: RecipientCounts): CampaignStatsView {
  const sent = Number(c.sent_count);
  const total = Number(c.total_recipients);
  const delivered = Number(c.delivered_count);
  const opened = Number(c.opened_count);
  const clicked = Number(c.clicked_count);
  const bounced = Number(c.bounced_count);
  return {
    campaignId: c.id,
    name: c.name,
    status: c.status,
    sentAt: c.sent_at,
    createdAt: c.created_at,
    totalRecipients: total,
    pending: counts?.pending ?? 0,
    queued: counts?.queued ?? 0,
    suppressed: counts?.suppressed ?? 0,
    failed: counts?.failed ?? 0,
    sent,
    delivered,
    opened,
    clicked,
    bounced,
    complained: counts?.complained ?? 0,
    openRate: rate(opened, sent),
    clickRate: rate(clicked, sent),
    deliveryRate: rate(delivered, sent),
    bounceRate: rate(bounced, total),
    lastError: c.last_error ?? '',
  };
}
