import type { Pool, Queryable } from '@svc/lib/db';
import type { TemplateType } from './templates-store.js';

export type EmailStatus =
  | 'queued'
  | 'sending'
  | 'sent'
  | 'delivered'
  | 'bounced'
  | 'complained'
  | 'suppressed'
  | 'failed';

/** emails.attachments: only rows queued before migration 004 have any (base64); newer sends use send_attachments. */
export interface StoredAttachment {
  filename: string;
  content: string;
  contentType: string;
  contentId?: string;
  disposition: 'attachment' | 'inline';
}

export interface EmailRow {
  id: string;
  project_id: string;
  contact_id: string;
  to_email: string;
  to_name: string;
  from_email: string;
  from_name: string;
  reply_to: string;
  subject: string;
  html: string;
  text: string;
  headers: Record<string, string>;
  attachments: StoredAttachment[];
  template_id: string | null;
  type: TemplateType;
  message_id: string;
  /** Claim order (domain/priority.ts): lower is sent first. */
  priority: number;
  /** The send (request or batch) the email belongs to; its attachments are stored under this id. */
  send_id: string | null;
  campaign_id: string | null;
  workflow_id: string | null;
  /** Workflow mail: the sending execution's chain depth (null: 0, or not workflow mail). */
  workflow_depth: number | null;
  /** The caller's key (QueueRecipient.dedupe_key), unique per project: a repeat is answered "duplicate". */
  dedupe_key: string | null;
  /** A test message: no campaign or workflow statistics or analytics count it. */
  test: boolean;
  status: EmailStatus;
  attempts: number;
  last_error: string | null;
  sent_at: Date | null;
  first_opened_at: Date | null;
  first_clicked_at: Date | null;
  open_count: number;
  click_count: number;
  bounce_reason: string | null;
  created_at: Date;
}

export type NewEmail = Omit<
  EmailRow,
  | 'attempts'
  | 'last_error'
  | 'sent_at'
  | 'first_opened_at'
  | 'first_clicked_at'
  | 'open_count'
  | 'click_count'
  | 'bounce_reason'
  | 'created_at'
  | 'attachments'
  | 'send_id'
  | 'campaign_id'
  | 'workflow_id'
  | 'workflow_depth'
  | 'dedupe_key'
  | 'test'
> &
  Partial<Pick<EmailRow, 'send_id' | 'campaign_id' | 'workflow_id' | 'workflow_depth' | 'dedupe_key' | 'test'>> & {
    /** Ignored: attachments are stored once per send (SendAttachmentsStore). */
    attachments?: never[];
  };

const INSERT_COLUMNS = [
  'id',
  'project_id',
  'contact_id',
  'to_email',
  'to_name',
  'from_email',
  'from_name',
  'reply_to',
  'subject',
  'html',
  'text',
  'headers',
  'template_id',
  'type',
  'message_id',
  'priority',
  'status',
  'bounce_reason',
  'send_id',
  'campaign_id',
  'workflow_id',
  'workflow_depth',
  'dedupe_key',
  'test',
] as const;

type InsertColumn = (typeof INSERT_COLUMNS)[number];
const INSERT_DEFAULTS: Partial<Record<InsertColumn, unknown>> = { bounce_reason: null, dedupe_key: null, test: false };

/**
 * An email as the INSERT's jsonb record: its columns, copied one by one. Object rest and spread per email made
 * objects JSON.stringify writes slowly (29 -> 4 us per campaign email, stringify included).
 */
function insertRecord(e: NewEmail & { bounce_reason?: string | null }): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const column of INSERT_COLUMNS) {
    const value = e[column];
    record[column] = value === undefined ? (INSERT_DEFAULTS[column] ?? null) : value;
  }
  return record;
}

/**
 * Planner settings of a delivery batch's transaction (SET LOCAL, sent with its BEGIN): lockDue walks emails_due in
 * claim order and stops after the batch, and the outcomes reach their rows by primary key. Left to the planner, a
 * table it has no statistics of yet (not analysed: a new database, autovacuum behind) is read through a bitmap of
 * every emails_due entry, sent mail's dead ones too (bitmap scans never mark them dead), then sorted, in both the
 * lock and the outcome UPDATE, each batch: a cost that grew with the mail sent since the last vacuum
 * (bench/messaging-sql.ts, 20,000 emails queued at once: 0.18-0.20 -> 0.04-0.05 ms of PostgreSQL per email for
 * the two).
 */
export const DELIVERY_PLAN_SETTINGS =
  'SET LOCAL enable_bitmapscan = off; SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off';

/** The email id that leads a Message-ID we set (`<id@sender domain>` without its angle brackets). */
const EMAIL_ID_OF_MESSAGE_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})@/i;

/** Columns the delivery worker reads (no large fields it does not need twice). */
export type ClaimedEmail = EmailRow;

export interface DeliveryOutcomes {
  /** response: the server's reply accepting the message (250 ...). */
  sent: { id: string; response: string }[];
  retry: { id: string; delayMs: number; error: string }[];
  bounced: { id: string; reason: string }[];
  failed: { id: string; reason: string }[];
}

/** An email as GET /emails shows it: the lifecycle times too, without the body. */
export type EmailSummaryRow = Omit<EmailRow, 'html' | 'text' | 'attachments'> & {
  delivered_at: Date | null;
  bounced_at: Date | null;
  complained_at: Date | null;
};

export interface EmailAttemptRow {
  attempt: number;
  outcome: 'sent' | 'retry' | 'bounced' | 'failed';
  smtp_code: number | null;
  smtp_response: string;
  at: Date;
}

/** GET /emails filters, already validated; `from` and `to` are inclusive. */
export interface EmailListFilter {
  statuses?: string[];
  contactId?: string;
  templateId?: string;
  campaignId?: string;
  from?: Date;
  to?: Date;
}

/** Every column but the large ones (html, text, attachments), which GET /emails never shows. */
const SUMMARY_COLUMNS = `id, project_id, contact_id, to_email, to_name, from_email, from_name, reply_to, subject,
  headers, template_id, type, message_id, priority, send_id, campaign_id, workflow_id, workflow_depth,
  dedupe_key, test, status,
  attempts, last_error, sent_at, delivered_at, first_opened_at, first_clicked_at, open_count, click_count,
  bounced_at, complained_at, bounce_reason, created_at`;

export interface EmailCountsRow {
  queued: number;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  suppressed: number;
  failed: number;
  opens: number;
  clicks: number;
}

export class EmailsStore {
  constructor(readonly pool: Pool) {}

  /**
   * Emails billed since `since`: queued for delivery (whatever became of them), not withheld, not tests.
   * A range scan of emails_project_created; the caps re-read it at most once a minute per capped project.
   */
  async countBillable(projectId: string, since: Date): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM emails
       WHERE project_id = $1 AND created_at >= $2 AND status <> 'suppressed' AND NOT test`,
      [projectId, since],
    );
    return Number(rows[0].n);
  }

  /**
   * A contact's MARKETING mail still waiting in the queue (a campaign's send window, a workflow's step, a retry
   * after a deferral) is withheld as `unsubscribed`. Mail a worker has claimed (`sending`) is left to go: the
   * claim holds the row's lock, so this statement waits for it and then no longer sees the row as queued.
   * `emails_project_contact` finds the contact's rows.
   */
  async withdrawMarketing(tx: Queryable, projectId: string, contactId: string): Promise<EmailRow[]> {
    const { rows } = await tx.query<EmailRow>(
      `UPDATE emails SET status = 'suppressed', bounce_reason = 'unsubscribed', locked_until = NULL,
         last_error = 'withdrawn from the queue: the contact unsubscribed'
       WHERE project_id = $1 AND contact_id = $2 AND status = 'queued' AND type = 'MARKETING'
       RETURNING ${SUMMARY_COLUMNS}`,
      [projectId, contactId],
    );
    return rows;
  }

  /**
   * Inserts the emails and answers the ids actually inserted: an email whose dedupe_key the project
   * already has (committed, or earlier in this transaction) is skipped, not an error.
   */
  async insertMany(tx: Queryable, emails: (NewEmail & { bounce_reason?: string | null })[]): Promise<Set<string>> {
    if (!emails.length) return new Set();
    const cols = INSERT_COLUMNS.join(', ');
    // The delivery loop is woken in the same statement: PostgreSQL sends one notification per transaction
    // for repeats of the same channel and payload, and none when no row was inserted. Prepared once per connection
    // (named): parsed and planned once, not for every batch.
    const { rows } = await tx.query<{ id: string }>({
      name: 'emails-insert-many',
      text: `WITH ins AS (
         INSERT INTO emails (${cols}) SELECT ${cols} FROM jsonb_populate_recordset(NULL::emails, $1::jsonb)
         ON CONFLICT (project_id, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING RETURNING id
       )
       SELECT id, pg_notify('emails_queued', '') FROM ins`,
      values: [JSON.stringify(emails.map(insertRecord))],
    });
    return new Set(rows.map((r) => r.id));
  }

  /** The email ids the project already queued under these dedupe keys (key -> id). */
  async byDedupeKeys(projectId: string, keys: string[]): Promise<Map<string, string>> {
    if (!keys.length) return new Map();
    // One probe of emails_dedupe per key. Written as `dedupe_key = ANY($2)`, a planner without statistics of
    // emails (not analysed yet) read every email of the project through emails_project_created, each batch.
    const { rows } = await this.pool.query<{ dedupe_key: string; id: string }>({
      name: 'emails-by-dedupe-keys',
      text: `SELECT k.key AS dedupe_key, e.id FROM unnest($2::text[]) AS k(key)
       CROSS JOIN LATERAL (SELECT id FROM emails WHERE project_id = $1 AND dedupe_key = k.key LIMIT 1) e`,
      values: [projectId, keys],
    });
    return new Map(rows.map((r) => [r.dedupe_key, r.id]));
  }

  /**
   * For each lookup, the lower-cased addresses among its `emails` that its project must not mail, with why
   * (bounce or complaint). All lookups in one statement: the primary key probed once per (project, address).
   */
  async suppressed(lookups: { projectId: string; emails: string[] }[]): Promise<Map<string, string>[]> {
    const projects = lookups.flatMap((l) => l.emails.map(() => l.projectId));
    const emails = lookups.flatMap((l) => l.emails.map((e) => e.toLowerCase()));
    const { rows } = await this.pool.query<{ project_id: string; email: string; reason: string }>(
      `SELECT s.project_id::text, s.email, s.reason
       FROM suppressions s JOIN unnest($1::uuid[], $2::text[]) AS x(p, e) ON s.project_id = x.p AND s.email = x.e`,
      [projects, emails],
    );
    const found = new Map(rows.map((r) => [`${r.project_id}:${r.email}`, r.reason]));
    return lookups.map(
      (l) =>
        new Map(
          l.emails.flatMap((e) => {
            const reason = found.get(`${l.projectId}:${e.toLowerCase()}`);
            return reason ? [[e.toLowerCase(), reason] as const] : [];
          }),
        ),
    );
  }

  async suppress(tx: Queryable, projectId: string, email: string, reason: string, emailId: string): Promise<void> {
    await tx.query(
      `INSERT INTO suppressions (project_id, email, reason, email_id) VALUES ($1, lower($2), $3, $4)
       ON CONFLICT DO NOTHING`,
      [projectId, email, reason, emailId],
    );
  }

  /** Leases due messages (SKIP LOCKED: several workers never take the same row). */
  async claimDue(limit: number, leaseSeconds: number): Promise<ClaimedEmail[]> {
    const { rows } = await this.pool.query<ClaimedEmail>(
      // Walks emails_due (priority, next_attempt_at): the due rows of the best priority come first, and
      // the scan stops after $1 unlocked rows, however many campaign rows wait behind them.
      // RETURNING has no order of its own: the outer SELECT hands the batch over best first.
      `WITH claimed AS (
         UPDATE emails SET status = 'sending', attempts = attempts + 1, locked_until = now() + make_interval(secs => $2)
         WHERE id IN (SELECT id FROM emails WHERE status = 'queued' AND next_attempt_at <= now()
                      ORDER BY priority, next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING *)
       SELECT * FROM claimed ORDER BY priority, next_attempt_at`,
      [limit, leaseSeconds],
    );
    return rows;
  }

  /**
   * Locks due messages for one delivery batch inside the caller's open transaction (SKIP LOCKED: other workers
   * pass over them). The row lock is the lease: claiming writes no row version (each would go through every
   * index), and when the worker dies its transaction ends and the rows are due again at once. The rows stay
   * `queued`; `attempts` is answered as this attempt's number, which recordOutcomes(..., locked) then stores.
   * The transaction runs with DELIVERY_PLAN_SETTINGS.
   */
  async lockDue(tx: Queryable, limit: number): Promise<ClaimedEmail[]> {
    // The rows as the walk of emails_due meets them, already in claim order. Through the ids (as claimDue) each row was
    // reached twice, by emails_due and again by primary key, and sorted wide: 0.55 -> 0.10 ms a batch of 100 (EXPLAIN
    // ANALYZE, 30,000 sent and 30,000 queued). Without DELIVERY_PLAN_SETTINGS a planner could sort the whole queue.
    const { rows } = await tx.query<ClaimedEmail>(
      `SELECT * FROM emails WHERE status = 'queued' AND next_attempt_at <= now()
       ORDER BY priority, next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    for (const row of rows) row.attempts++;
    return rows;
  }

  /** Puts locked rows (lockDue) off for `delayMs` (throttled): not an attempt. */
  async postpone(tx: Queryable, ids: string[], delayMs: number): Promise<void> {
    if (!ids.length) return;
    await tx.query(
      `UPDATE emails SET next_attempt_at = now() + make_interval(secs => $2::double precision / 1000)
       WHERE id = ANY($1::uuid[]) AND status = 'queued'`,
      [ids, delayMs],
    );
  }

  /** Messages whose worker died mid-send go back to the queue (at-least-once delivery). */
  async requeueExpiredLeases(): Promise<number> {
    const { rowCount } = await this.pool.query(
      `UPDATE emails SET status = 'queued', locked_until = NULL WHERE status = 'sending' AND locked_until < now()`,
    );
    return rowCount ?? 0;
  }

  /** Hands leased rows back untouched (throttled), to be taken again after `delayMs`. */
  async release(ids: string[], delayMs: number): Promise<void> {
    if (!ids.length) return;
    await this.pool.query(
      `UPDATE emails SET status = 'queued', attempts = attempts - 1, locked_until = NULL,
         next_attempt_at = now() + make_interval(secs => $2::double precision / 1000)
       WHERE id = ANY($1::uuid[]) AND status = 'sending'`,
      [ids, delayMs],
    );
  }

  /**
   * Applies the outcomes of leased rows and writes each one's attempt (email_attempts) with the SMTP answer.
   * Each statement inserts attempts only for the rows it updated: a row whose lease another worker took
   * over records nothing here. `locked`: rows this transaction locked with lockDue (still `queued`, the attempt
   * counted here) rather than leased by claimDue (`sending`, counted by the claim). A locked row needs no status
   * check: every writer waits for the lock, and lockDue took it only on rows that were queued. Without one the
   * primary key is the statement's only way to its rows; with `status = 'queued'` a planner without statistics
   * may walk emails_due instead, every queued row for each outcome (a nested loop over a materialised scan).
   */
  async recordOutcomes(tx: Queryable, o: DeliveryOutcomes, locked = false): Promise<void> {
    const leased = locked ? '' : ` AND e.status = 'sending'`;
    const count = locked ? 'attempts = attempts + 1,' : '';
    // The reply code leads the SMTP answer ("451 4.7.1 ..."), after "gave up after N attempts: " when given up.
    const attempt = (outcome: string) =>
      `INSERT INTO email_attempts (email_id, attempt, outcome, smtp_code, smtp_response)
       SELECT id, attempts, '${outcome}',
         substring(answer FROM '^(?:gave up after \\d+ attempts: )?([2-5]\\d\\d)[ -]')::int, coalesce(answer, '')
       FROM updated`;
    if (o.sent.length && locked) {
      // Store migration 013, record_sent_emails: this statement as a generic plan kept per session.
      await tx.query('SELECT record_sent_emails($1::uuid[], $2::text[])', [
        o.sent.map((s) => s.id),
        o.sent.map((s) => s.response),
      ]);
    } else if (o.sent.length) {
      await tx.query(
        `WITH updated AS (
           UPDATE emails e SET ${count} status = 'sent', sent_at = now(), locked_until = NULL, last_error = NULL
           FROM unnest($1::uuid[], $2::text[]) AS d(id, response) WHERE e.id = d.id${leased}
           RETURNING e.id, e.attempts, d.response AS answer)
         ${attempt('sent')}`,
        [o.sent.map((s) => s.id), o.sent.map((s) => s.response)],
      );
    }
    if (o.retry.length) {
      await tx.query(
        `WITH updated AS (
           UPDATE emails e SET ${count} status = 'queued', locked_until = NULL, last_error = d.err,
             next_attempt_at = now() + make_interval(secs => d.ms::double precision / 1000)
           FROM unnest($1::uuid[], $2::int[], $3::text[]) AS d(id, ms, err)
           WHERE e.id = d.id${leased} RETURNING e.id, e.attempts, d.err AS answer)
         ${attempt('retry')}`,
        [o.retry.map((r) => r.id), o.retry.map((r) => r.delayMs), o.retry.map((r) => r.error)],
      );
    }
    if (o.bounced.length) {
      await tx.query(
        `WITH updated AS (
           UPDATE emails e SET ${count} status = 'bounced', bounced_at = now(), locked_until = NULL,
             bounce_reason = d.reason, last_error = d.reason
           FROM unnest($1::uuid[], $2::text[]) AS d(id, reason) WHERE e.id = d.id${leased}
           RETURNING e.id, e.attempts, d.reason AS answer)
         ${attempt('bounced')}`,
        [o.bounced.map((r) => r.id), o.bounced.map((r) => r.reason)],
      );
    }
    if (o.failed.length) {
      await tx.query(
        `WITH updated AS (
           UPDATE emails e SET ${count} status = 'failed', locked_until = NULL, last_error = d.reason
           FROM unnest($1::uuid[], $2::text[]) AS d(id, reason) WHERE e.id = d.id${leased}
           RETURNING e.id, e.attempts, d.reason AS answer)
         ${attempt('failed')}`,
        [o.failed.map((r) => r.id), o.failed.map((r) => r.reason)],
      );
    }
  }

  /** One email of the project (another project's id: null). */
  async get(projectId: string, id: string): Promise<EmailSummaryRow | null> {
    const { rows } = await this.pool.query<EmailSummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM emails WHERE id = $1 AND project_id = $2`,
      [id, projectId],
    );
    return rows[0] ?? null;
  }

  /** An email's delivery attempts, oldest first. */
  async attempts(emailId: string): Promise<EmailAttemptRow[]> {
    const { rows } = await this.pool.query<EmailAttemptRow>(
      'SELECT attempt, outcome, smtp_code, smtp_response, at FROM email_attempts WHERE email_id = $1 ORDER BY id',
      [emailId],
    );
    return rows;
  }

  private listFilter(projectId: string, f: EmailListFilter): { where: string[]; params: unknown[] } {
    const where = ['project_id = $1'];
    const params: unknown[] = [projectId];
    const add = (sql: (n: string) => string, value: unknown) => {
      params.push(value);
      where.push(sql(`$${params.length}`));
    };
    if (f.statuses?.length) add((n) => `status = ANY(${n}::text[])`, f.statuses);
    if (f.contactId) add((n) => `contact_id = ${n}`, f.contactId);
    if (f.templateId) add((n) => `template_id = ${n}`, f.templateId);
    if (f.campaignId) add((n) => `campaign_id = ${n}`, f.campaignId);
    if (f.from) add((n) => `created_at >= ${n}`, f.from);
    if (f.to) add((n) => `created_at <= ${n}`, f.to);
    return { where, params };
  }

  /**
   * A page of the project's emails, newest first. Keyset on (created_at, id): the project's index on
   * (project_id, created_at DESC), or the contact or template one when that filter is set, is read in order.
   */
  async page(projectId: string, f: EmailListFilter & { after?: { createdAt: Date; id: string }; limit: number }) {
    const { where, params } = this.listFilter(projectId, f);
    if (f.after) {
      params.push(f.after.createdAt, f.after.id);
      where.push(`(created_at, id) < ($${params.length - 1}, $${params.length})`);
    }
    params.push(f.limit);
    const { rows } = await this.pool.query<EmailSummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM emails WHERE ${where.join(' AND ')}
       ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    return rows;
  }

  async count(projectId: string, f: EmailListFilter): Promise<number> {
    const { where, params } = this.listFilter(projectId, f);
    const { rows } = await this.pool.query<{ count: number }>(
      `SELECT count(*) FROM emails WHERE ${where.join(' AND ')}`,
      params,
    );
    return rows[0].count;
  }

  /** Counts one open; `is_first` is true for the first one (the row lock serialises concurrent opens). */
  async recordOpen(tx: Queryable, id: string): Promise<(EmailRow & { is_first: boolean }) | null> {
    const { rows } = await tx.query<EmailRow & { is_first: boolean }>(
      `UPDATE emails SET open_count = open_count + 1, first_opened_at = coalesce(first_opened_at, now())
       WHERE id = $1 RETURNING *, open_count = 1 AS is_first`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** The project of an email (primary key), null when the row is gone. */
  async projectOf(id: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ project_id: string }>('SELECT project_id FROM emails WHERE id = $1', [id]);
    return rows[0]?.project_id ?? null;
  }

  async recordClick(tx: Queryable, id: string): Promise<(EmailRow & { is_first: boolean }) | null> {
    const { rows } = await tx.query<EmailRow & { is_first: boolean }>(
      `UPDATE emails SET click_count = click_count + 1, first_clicked_at = coalesce(first_clicked_at, now())
       WHERE id = $1 RETURNING *, click_count = 1 AS is_first`,
      [id],
    );
    return rows[0] ?? null;
  }

  /**
   * By our id or by the Message-ID we set (with or without angle brackets). Every Message-ID we set is
   * `<email id@sender domain>` (email-batch.ts), so one names its row by primary key; any other names none of ours.
   */
  async findForNotification(ref: { emailId?: string; messageId?: string }): Promise<EmailRow | null> {
    if (ref.emailId) {
      const { rows } = await this.pool.query<EmailRow>('SELECT * FROM emails WHERE id = $1', [ref.emailId]);
      if (rows[0]) return rows[0];
    }
    if (ref.messageId) {
      const bare = ref.messageId.trim().replace(/^<|>$/g, '');
      const id = EMAIL_ID_OF_MESSAGE_ID.exec(bare)?.[1];
      if (!id) return null;
      const { rows } = await this.pool.query<EmailRow>('SELECT * FROM emails WHERE id = $1 AND message_id = $2', [
        id,
        `<${bare}>`,
      ]);
      return rows[0] ?? null;
    }
    return null;
  }

  async markDelivered(tx: Queryable, id: string): Promise<boolean> {
    const { rowCount } = await tx.query(
      `UPDATE emails SET status = 'delivered', delivered_at = coalesce(delivered_at, now())
       WHERE id = $1 AND status IN ('queued', 'sending', 'sent')`,
      [id],
    );
    return rowCount === 1;
  }

  async markBounced(tx: Queryable, id: string, reason: string): Promise<boolean> {
    const { rowCount } = await tx.query(
      `UPDATE emails SET status = 'bounced', bounced_at = coalesce(bounced_at, now()), bounce_reason = $2
       WHERE id = $1 AND status <> 'bounced'`,
      [id, reason],
    );
    return rowCount === 1;
  }

  async markComplained(tx: Queryable, id: string): Promise<boolean> {
    const { rowCount } = await tx.query(
      `UPDATE emails SET status = 'complained', complained_at = coalesce(complained_at, now())
       WHERE id = $1 AND status <> 'complained'`,
      [id],
    );
    return rowCount === 1;
  }

  async counts(projectId: string, since: Date): Promise<EmailCountsRow> {
    const { rows } = await this.pool.query<EmailCountsRow>(
      `SELECT count(*) FILTER (WHERE status IN ('queued', 'sending')) AS queued,
              count(*) FILTER (WHERE sent_at IS NOT NULL) AS sent,
              count(*) FILTER (WHERE delivered_at IS NOT NULL) AS delivered,
              count(*) FILTER (WHERE first_opened_at IS NOT NULL) AS opened,
              count(*) FILTER (WHERE first_clicked_at IS NOT NULL) AS clicked,
              count(*) FILTER (WHERE status = 'bounced') AS bounced,
              count(*) FILTER (WHERE complained_at IS NOT NULL) AS complained,
              count(*) FILTER (WHERE status = 'suppressed') AS suppressed,
              count(*) FILTER (WHERE status = 'failed') AS failed,
              coalesce(sum(open_count), 0) AS opens,
              coalesce(sum(click_count), 0) AS clicks
       FROM emails WHERE project_id = $1 AND created_at >= $2 AND NOT test`,
      [projectId, since],
    );
    return rows[0];
  }

  /**
   * Which of these email ids belong to one of these projects (GET /dev/mail shows a user only
   * their projects' mail).
   */
  async ownedBy(ids: string[], projectIds: string[]): Promise<Set<string>> {
    if (!ids.length || !projectIds.length) return new Set();
    const { rows } = await this.pool.query<{ id: string }>(
      'SELECT id FROM emails WHERE id = ANY($1::uuid[]) AND project_id = ANY($2::uuid[])',
      [ids, projectIds],
    );
    return new Set(rows.map((r) => r.id));
  }

  async queuedRetries(
    projectId: string,
    limit: number,
  ): Promise<{ id: string; to_email: string; subject: string; next_attempt_at: Date }[]> {
    const { rows } = await this.pool.query(
      `SELECT id, to_email, subject, next_attempt_at FROM emails
       WHERE project_id = $1 AND status = 'queued' ORDER BY next_attempt_at LIMIT $2`,
      [projectId, limit],
    );
    return rows;
  }
}
