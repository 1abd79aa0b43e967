import { withTransaction, type Pool } from '@svc/lib/db';
import type { CampaignRow } from './campaign-row.js';

/** A recipient of the audience snapshot, as the contacts service streamed it. */
export interface SnapshotRecipient {
  contactId: string;
  email: string;
  subscribed: boolean;
  variables: Record<string, unknown>;
}

export interface PendingRecipient {
  contact_id: string;
  email: string;
  subscribed: boolean;
  variables: Record<string, unknown>;
}

/** Messaging's answer for one handed-over recipient. */
export interface HandOver {
  contactId: string;
  emailId: string | null;
  status: 'queued' | 'suppressed' | 'failed';
  error: string | null;
}

/**
 * The fan-out's durable state. Every write that moves a campaign forward is fenced by the lease
 * token of the worker holding it and by status SENDING: a worker whose lease expired (and was
 * taken over) or whose campaign was cancelled changes nothing of the campaign.
 */
export class FanOutStore {
  constructor(readonly pool: Pool) {}

  /**
   * Leases up to `limit` due campaigns (SCHEDULED whose time came, SENDING not held by a live
   * lease), moving SCHEDULED ones to SENDING in the same statement. SKIP LOCKED: replicas never
   * take the same campaign; the partial index campaigns_due keeps the scan to due rows.
   */
  async claim(limit: number, leaseSeconds: number): Promise<CampaignRow[]> {
    const { rows } = await this.pool.query<CampaignRow>(
      `UPDATE campaigns c SET
         status = 'SENDING',
         sent_at = COALESCE(c.sent_at, now()),
         lease_until = now() + make_interval(secs => $2),
         lease_token = gen_random_uuid()
       WHERE c.id IN (
         SELECT id FROM campaigns
         WHERE status IN ('SCHEDULED', 'SENDING') AND run_at <= now()
           AND (lease_until IS NULL OR lease_until < now())
         ORDER BY run_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING c.*`,
      [limit, leaseSeconds],
    );
    return rows;
  }

  /** Gives the campaign back to the scheduler, due again after `delayMs`; `error` says why (none: the step worked). */
  async release(id: string, token: string, delayMs: number, error?: string): Promise<void> {
    await this.pool.query(
      `UPDATE campaigns SET lease_until = NULL, lease_token = NULL,
         run_at = now() + make_interval(secs => $3::double precision / 1000),
         last_error = $4
       WHERE id = $1 AND lease_token = $2 AND status = 'SENDING'`,
      [id, token, delayMs, error ?? null],
    );
  }

  /** Whether the worker still holds the campaign (not cancelled, lease not taken over). */
  async stillHeld(id: string, token: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `SELECT 1 FROM campaigns WHERE id = $1 AND lease_token = $2 AND status = 'SENDING'`,
      [id, token],
    );
    return rowCount === 1;
  }

  /**
   * Writes one streamed batch of the audience and moves the checkpoint past it, in one
   * transaction: a crash before the commit re-streams the batch, after it resumes after it.
   * Existing (campaign, contact) rows are kept, so a re-streamed batch counts nobody twice.
   * false when the worker no longer holds the campaign (nothing is written).
   */
  async addSnapshotBatch(
    id: string,
    token: string,
    recipients: SnapshotRecipient[],
    afterId: string | null,
    done: boolean,
  ): Promise<boolean> {
    return withTransaction(this.pool, async (tx) => {
      const held = await tx.query(
        `SELECT 1 FROM campaigns WHERE id = $1 AND lease_token = $2 AND status = 'SENDING' FOR UPDATE`,
        [id, token],
      );
      if (held.rowCount !== 1) return false;
      let inserted = 0;
      if (recipients.length) {
        const r = await tx.query(
          `INSERT INTO campaign_recipients (campaign_id, contact_id, email, subscribed, variables)
           SELECT $1, c, e, s, v::jsonb FROM unnest($2::uuid[], $3::text[], $4::boolean[], $5::text[]) AS x(c, e, s, v)
           ON CONFLICT DO NOTHING`,
          [
            id,
            recipients.map((r) => r.contactId),
            recipients.map((r) => r.email),
            recipients.map((r) => r.subscribed),
            recipients.map((r) => JSON.stringify(r.variables)),
          ],
        );
        inserted = r.rowCount ?? 0;
      }
      await tx.query(
        `UPDATE campaigns SET total_recipients = total_recipients + $2,
           snapshot_after = COALESCE($3, snapshot_after), snapshot_done = $4
         WHERE id = $1`,
        [id, inserted, afterId, done],
      );
      return true;
    });
  }

  /**
   * Refreshes the planner's statistics of campaign_recipients once a snapshot is written, before its hand-over.
   * Without them (a table just filled, not analysed yet) `pending` reads every waiting recipient of the campaign
   * through a bitmap scan and sorts them, each batch (100 ms a batch at 60,000 waiting), instead of walking
   * campaign_recipients_pending in order. A sample of at most 30,000 rows, whatever the table's size.
   */
  async analyzeRecipients(): Promise<void> {
    await this.pool.query('ANALYZE campaign_recipients');
  }

  /** The next recipients to hand over, in contact id order (the partial index campaign_recipients_pending). */
  async pending(id: string, limit: number): Promise<PendingRecipient[]> {
    const { rows } = await this.pool.query<PendingRecipient>(
      `SELECT contact_id, email, subscribed, variables FROM campaign_recipients
       WHERE campaign_id = $1 AND handed_over_at IS NULL ORDER BY contact_id LIMIT $2`,
      [id, limit],
    );
    return rows;
  }

  /** Handed over and queued, delivery not yet ended (sent or bounced): the send window in use. */
  async inFlight(id: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM campaign_recipients
       WHERE campaign_id = $1 AND queue_status = 'queued' AND sent_at IS NULL AND bounced_at IS NULL`,
      [id],
    );
    return Number(rows[0].n);
  }

  /** Records messaging's answers; a recipient recorded before (a retried batch) keeps its first answer. */
  async recordHandOver(id: string, results: HandOver[]): Promise<void> {
    if (!results.length) return;
    await this.pool.query(
      `UPDATE campaign_recipients r SET handed_over_at = now(), email_id = x.e, queue_status = x.s, error = x.err
       FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[]) AS x(c, e, s, err)
       WHERE r.campaign_id = $1 AND r.contact_id = x.c AND r.handed_over_at IS NULL`,
      [
        id,
        results.map((r) => r.contactId),
        results.map((r) => r.emailId),
        results.map((r) => r.status),
        results.map((r) => r.error),
      ],
    );
  }

  /** SENDING -> SENT once the snapshot is complete and nobody waits to be handed over. */
  async finish(id: string, token: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE campaigns SET status = 'SENT', run_at = NULL, lease_until = NULL, lease_token = NULL, updated_at = now()
       WHERE id = $1 AND lease_token = $2 AND status = 'SENDING' AND snapshot_done
         AND NOT EXISTS (SELECT 1 FROM campaign_recipients WHERE campaign_id = $1 AND handed_over_at IS NULL)`,
      [id, token],
    );
    return rowCount === 1;
  }
}
