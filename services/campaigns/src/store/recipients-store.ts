import type { Pool } from '@svc/lib/db';

/** A lifecycle step and the recipient flag and campaign counter it sets (fixed names, never client text). */
export const LIFECYCLE_COLUMNS = {
  sent: { flag: 'sent_at', counter: 'sent_count' },
  delivery: { flag: 'delivered_at', counter: 'delivered_count' },
  open: { flag: 'opened_at', counter: 'opened_count' },
  click: { flag: 'clicked_at', counter: 'clicked_count' },
  bounce: { flag: 'bounced_at', counter: 'bounced_count' },
  complaint: { flag: 'complained_at', counter: null },
} as const;

export type LifecycleStep = keyof typeof LIFECYCLE_COLUMNS;

export interface RecipientCounts {
  total: number;
  pending: number;
  queued: number;
  suppressed: number;
  failed: number;
  complained: number;
}

/** Per-recipient flags and the campaign counters they feed. */
export class RecipientsStore {
  constructor(readonly pool: Pool) {}

  /**
   * Sets the step's flag of one recipient if it is not set yet and, only then, adds one to the
   * campaign's counter, in one statement: a redelivered message or a second open changes nothing.
   * Returns whether this call set the flag.
   */
  async mark(campaignId: string, contactId: string, step: LifecycleStep, at: Date): Promise<boolean> {
    const { flag, counter } = LIFECYCLE_COLUMNS[step];
    const bump = counter
      ? `, bumped AS (UPDATE campaigns SET ${counter} = ${counter} + 1
           WHERE id = $1 AND EXISTS (SELECT 1 FROM flagged))`
      : '';
    const { rows } = await this.pool.query<{ n: string }>(
      `WITH flagged AS (
         UPDATE campaign_recipients SET ${flag} = $3
         WHERE campaign_id = $1 AND contact_id = $2 AND ${flag} IS NULL RETURNING 1)${bump}
       SELECT count(*) AS n FROM flagged`,
      [campaignId, contactId, at],
    );
    return Number(rows[0].n) > 0;
  }

  /** The recipient breakdown of campaigns (hand-over state), by campaign id. */
  async counts(campaignIds: string[]): Promise<Map<string, RecipientCounts>> {
    const out = new Map<string, RecipientCounts>();
    if (!campaignIds.length) return out;
    const { rows } = await this.pool.query<Record<keyof RecipientCounts, string> & { campaign_id: string }>(
      `SELECT campaign_id, count(*) AS total,
         count(*) FILTER (WHERE handed_over_at IS NULL) AS pending,
         count(*) FILTER (WHERE queue_status = 'queued') AS queued,
         count(*) FILTER (WHERE queue_status = 'suppressed') AS suppressed,
         count(*) FILTER (WHERE queue_status = 'failed') AS failed,
         count(*) FILTER (WHERE complained_at IS NOT NULL) AS complained
       FROM campaign_recipients WHERE campaign_id = ANY($1::uuid[]) GROUP BY campaign_id`,
      [campaignIds],
    );
    for (const r of rows) {
      out.set(r.campaign_id, {
        total: Number(r.total),
        pending: Number(r.pending),
        queued: Number(r.queued),
        suppressed: Number(r.suppressed),
        failed: Number(r.failed),
        complained: Number(r.complained),
      });
    }
    return out;
  }
}
