import { withTransaction, type Pool } from '@svc/lib/db';
import type { CampaignRow } from './campaign-row.js';

/** Below every contact id: the hand-over checkpoint of a campaign that handed over nobody yet. */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

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

  /**
   * Runs `handOver` while the worker still holds the campaign (not cancelled, lease not taken over), else answers
   * null without running it. The campaign's row is held FOR KEY SHARE meanwhile: a project wipe's DELETE waits for
   * the round's QueueEmails to end, so messaging (wiped after campaigns) never gets mail of a wiped project
   * afterwards. Updates (a cancel, the counters) do not wait.
   */
  async whileHeld<T>(id: string, token: string, handOver: () => Promise<T>): Promise<T | null> {
    return withTransaction(this.pool, async (tx) => {
      const { rowCount } = await tx.query(
        `SELECT 1 FROM campaigns WHERE id = $1 AND lease_token = $2 AND status = 'SENDING' FOR KEY SHARE`,
        [id, token],
      );
      return rowCount === 1 ? handOver() : null;
    });
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
      // NO KEY UPDATE: serialised with a cancel or a DELETE, not with a hand-over round in flight (whileHeld).
      const held = await tx.query(
        `SELECT 1 FROM campaigns WHERE id = $1 AND lease_token = $2 AND status = 'SENDING' FOR NO KEY UPDATE`,
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

  /**
   * The next recipients to hand over, in contact id order after the hand-over checkpoint (`after`, none: from the
   * start), skipping any recorded as handed over on their row (the partial index campaign_recipients_pending).
   */
  async pending(id: string, after: string | null, limit: number): Promise<PendingRecipient[]> {
    const { rows } = await this.pool.query<PendingRecipient>(
      `SELECT contact_id, email, subscribed, variables FROM campaign_recipients
       WHERE campaign_id = $1 AND contact_id > $2 AND handed_over_at IS NULL ORDER BY contact_id LIMIT $3`,
      [id, after ?? NIL_UUID, limit],
    );
    return rows;
  }

  /**
   * Handed over and queued, delivery not yet ended (sent, bounced or withdrawn): the send window in use. Recipients
   * recorded per row (by a release before the checkpoint, or a round cancelled meanwhile) through
   * campaign_recipients_in_flight; those of the checkpoint from the campaign's counters: queued less sent, bounced
   * and withdrawn. Every release keeps sent_count and bounced_count, so lifecycle messages handled by an older
   * release's consumer during an upgrade still free the window. The counters make it an estimate that errs low (a
   * window a little larger than set, never a stalled one): a recipient that bounces after it was sent, and one of
   * the rows above that ended, count as ended twice.
   */
  async inFlight(id: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM campaign_recipients
                WHERE campaign_id = $1 AND queue_status = 'queued' AND sent_at IS NULL AND bounced_at IS NULL)
            + (SELECT greatest(handover_queued - sent_count - bounced_count - handover_withdrawn, 0)
               FROM campaigns WHERE id = $1) AS n`,
      [id],
    );
    return Number(rows[0].n ?? 0);
  }

  /**
   * Records one hand-over round whose recipients were every pending one up to `last` (in contact id order): the
   * checkpoint moves to `last` and counts the queued ones (queued or duplicate); only the others (suppressed,
   * failed) are written on their rows. One statement, fenced like every forward write. false when the worker no
   * longer holds the campaign: nothing was written (the caller records the answers per row instead).
   */
  async recordHandOverBatch(id: string, token: string, results: HandOver[], last: string): Promise<boolean> {
    const others = results.filter((r) => r.status !== 'queued');
    const { rows } = await this.pool.query<{ n: string }>(
      `WITH c AS (
         UPDATE campaigns SET handover_after = $3, handover_queued = handover_queued + $4
         WHERE id = $1 AND lease_token = $2 AND status = 'SENDING' RETURNING id),
       r AS (
         UPDATE campaign_recipients r SET handed_over_at = now(), email_id = x.e, queue_status = x.s, error = x.err
         FROM unnest($5::uuid[], $6::uuid[], $7::text[], $8::text[]) AS x(c, e, s, err)
         WHERE r.campaign_id = $1 AND r.contact_id = x.c AND r.handed_over_at IS NULL AND EXISTS (SELECT 1 FROM c))
       SELECT count(*) AS n FROM c`,
      [
        id,
        token,
        last,
        results.length - others.length,
        others.map((r) => r.contactId),
        others.map((r) => r.emailId),
        others.map((r) => r.status),
        others.map((r) => r.error),
      ],
    );
    return Number(rows[0].n) === 1;
  }

  /** Records messaging's answers on each recipient's row; a recipient recorded before keeps its first answer. */
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

  /** SENDING -> SENT once the snapshot is complete and nobody waits to be handed over (past the checkpoint). */
  async finish(id: string, token: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE campaigns SET status = 'SENT', run_at = NULL, lease_until = NULL, lease_token = NULL, updated_at = now()
       WHERE id = $1 AND lease_token = $2 AND status = 'SENDING' AND snapshot_done
         AND NOT EXISTS (SELECT 1 FROM campaign_recipients r WHERE r.campaign_id = $1 AND r.handed_over_at IS NULL
           AND (campaigns.handover_after IS NULL OR r.contact_id > campaigns.handover_after))`,
      [id, token],
    );
    return rowCount === 1;
  }
}
