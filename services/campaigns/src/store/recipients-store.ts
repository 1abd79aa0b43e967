import type { Pool, Queryable } from '@svc/lib/db';

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

/** One lifecycle step of one recipient, as a message reported it. */
export interface RecipientMark {
  campaignId: string;
  contactId: string;
  step: LifecycleStep;
  at: Date;
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
    return (await this.markMany(this.pool, [{ campaignId, contactId, step, at }])) > 0;
  }

  /**
   * Messaging withdrew the recipient's queued email (the contact unsubscribed before it went): the recipient is
   * suppressed, like one withheld at hand-over, and leaves the send window (a recipient of the hand-over checkpoint,
   * no answer on its row, through the campaign's handover_withdrawn). Answers whether it was still queued.
   */
  async markWithdrawn(campaignId: string, contactId: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ n: string }>(
      `WITH w AS (
         UPDATE campaign_recipients r SET queue_status = 'suppressed', error = 'unsubscribed'
         FROM (SELECT queue_status FROM campaign_recipients WHERE campaign_id = $1 AND contact_id = $2 FOR UPDATE) o
         WHERE r.campaign_id = $1 AND r.contact_id = $2 AND (r.queue_status = 'queued' OR r.queue_status IS NULL)
           AND r.sent_at IS NULL
         RETURNING o.queue_status IS NULL AND r.bounced_at IS NULL AS checkpoint),
       c AS (UPDATE campaigns SET handover_withdrawn = handover_withdrawn + 1
             WHERE id = $1 AND EXISTS (SELECT 1 FROM w WHERE checkpoint))
       SELECT count(*) AS n FROM w`,
      [campaignId, contactId],
    );
    return Number(rows[0].n) === 1;
  }

  /**
   * `mark` for many messages at once, set-based: one statement per step present (flags, then each
   * campaign's counter by the number of flags this statement set). Repeats within the batch count once,
   * at their earliest time. Answers how many flags were set.
   */
  async markMany(q: Queryable, marks: RecipientMark[]): Promise<number> {
    let set = 0;
    for (const step of new Set(marks.map((m) => m.step))) {
      const of = marks.filter((m) => m.step === step);
      const { flag, counter } = LIFECYCLE_COLUMNS[step];
      const bump = counter
        ? `, bumped AS (UPDATE campaigns c SET ${counter} = ${counter} + f.n
             FROM (SELECT campaign_id, count(*) AS n FROM flagged GROUP BY campaign_id) f WHERE c.id = f.campaign_id)`
        : '';
      const { rows } = await q.query<{ n: string }>(
        `WITH x AS (
           SELECT DISTINCT ON (c, k) c, k, at FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS x(c, k, at)
           ORDER BY c, k, at),
         flagged AS (
           UPDATE campaign_recipients r SET ${flag} = x.at FROM x
           WHERE r.campaign_id = x.c AND r.contact_id = x.k AND r.${flag} IS NULL RETURNING r.campaign_id)${bump}
         SELECT count(*) AS n FROM flagged`,
        [of.map((m) => m.campaignId), of.map((m) => m.contactId), of.map((m) => m.at)],
      );
      set += Number(rows[0].n);
    }
    return set;
  }

  /**
   * The recipient breakdown of campaigns (hand-over state), by campaign id. Handed over: an answer on the row, or a
   * contact id up to the campaign's checkpoint; such a recipient without an answer on its row was queued.
   */
  async counts(campaignIds: string[]): Promise<Map<string, RecipientCounts>> {
    const out = new Map<string, RecipientCounts>();
    if (!campaignIds.length) return out;
    const { rows } = await this.pool.query<Record<keyof RecipientCounts, string> & { campaign_id: string }>(
      `SELECT r.campaign_id, count(*) AS total,
         count(*) FILTER (WHERE NOT h.handed) AS pending,
         count(*) FILTER (WHERE h.handed AND coalesce(r.queue_status, 'queued') = 'queued') AS queued,
         count(*) FILTER (WHERE r.queue_status = 'suppressed') AS suppressed,
         count(*) FILTER (WHERE r.queue_status = 'failed') AS failed,
         count(*) FILTER (WHERE r.complained_at IS NOT NULL) AS complained
       FROM campaign_recipients r JOIN campaigns c ON c.id = r.campaign_id
       CROSS JOIN LATERAL (SELECT r.handed_over_at IS NOT NULL OR coalesce(r.contact_id <= c.handover_after, false)
                           AS handed) h
       WHERE r.campaign_id = ANY($1::uuid[]) GROUP BY r.campaign_id`,
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
