import { randomUUID } from 'node:crypto';
import type { BillingCaps } from '@svc/lib/billing-caps';
import { AppError, validationError } from '@svc/lib/errors';
import type { PoolClient } from '@svc/lib/db';
import { CallBatcher } from '@svc/lib/call-batcher';
import { GroupCommit } from '@svc/lib/group-commit';
import { uuidv7 } from '@svc/lib/ids';
import type { ActivityRow, ActivityStore } from '../store/activity-store.js';
import type { EmailsStore, NewEmail } from '../store/emails-store.js';
import type { SendAttachmentsStore } from '../store/send-attachments-store.js';
import type { TemplateType } from '../store/templates-store.js';
import type { Address } from './address.js';
import { composeHeaders, unsubscribeMailto } from './message-headers.js';
import { htmlToPlainText } from './plain-text.js';
import { SEND_PRIORITY, type SendSource } from './priority.js';
import type { CompiledTemplate, Renderer } from './render.js';
import type { SenderDomains } from './sender-domains.js';
import type { SendIdempotency, SendRecords } from './send-records.js';
import type { Attachment } from './send-request.js';
import type { Templates } from './templates.js';
import { addTracking } from './tracking-html.js';
import { subscriptionUrls, type TrackingTokens } from './tracking-tokens.js';

/** SPEC.md Limits: "Total message size at most 40 MB". */
const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;

/** What a batch's emails say, before the template (if any) fills the gaps. Already validated. */
export interface ContentSpec {
  templateId?: string;
  subject?: string;
  body?: string;
  from?: Address;
  replyTo?: string;
  /** Inline content only (a template has its own): TRANSACTIONAL by default. */
  type?: TemplateType;
  headers?: Record<string, string>;
  attachments?: Attachment[];
}

/** Content resolved and parsed once per batch, ready to render per recipient. */
export interface BatchContent {
  subject: CompiledTemplate;
  body: CompiledTemplate;
  from: Address;
  replyTo: string;
  type: TemplateType;
  templateId: string | null;
  /** The verified domain covering `from` (Message-ID, DKIM, List-Unsubscribe mailto). */
  senderDomain: string;
  headers?: Record<string, string>;
  attachments: Attachment[];
}

export interface BatchRecipient {
  contactId: string;
  email: string;
  name: string;
  subscribed: boolean;
  /** Contact data and one-off values; email, id and the subscription URLs are added per email. */
  variables: Record<string, unknown>;
  /** Unique per project: a key already queued (earlier, concurrently or in this batch) is not queued again. */
  dedupeKey?: string;
  /** Workflow mail: the sending execution's chain depth, carried by the email's lifecycle messages. */
  workflowDepth?: number;
}

export interface BatchOrigin {
  source: SendSource;
  campaignId?: string;
  workflowId?: string;
  /** Test messages: marked on the rows and their lifecycle messages. */
  test?: boolean;
}

export interface QueueOptions {
  /** Idempotency-Key of /v1/send, recorded in the same transaction (KeyAlreadyRecorded when taken). */
  idempotency?: SendIdempotency;
  /**
   * QueueEmails: a recipient whose email does not render (template error, render budget, over 40 MB)
   * answers "failed" and the others are queued. Otherwise (/v1/send) the whole batch is a 422.
   */
  perRecipientFailures?: boolean;
}

/**
 * queued or suppressed: this call's email. duplicate: the recipient's dedupe key was already queued,
 * emailId is that email. failed: nothing queued for the recipient (emailId empty), see `error`.
 */
export type QueuedStatus = 'queued' | 'suppressed' | 'duplicate' | 'failed';

/**
 * Why an email was withheld: MARKETING mail to an unsubscribed (or new) contact, or an address that
 * bounced or complained earlier.
 */
export type SuppressionReason = 'unsubscribed' | 'bounced' | 'complained';

/** The suppressions table's reason (bounce, complaint) as the API names it. */
export const suppressionReason = (stored: string): SuppressionReason =>
  stored === 'complaint' ? 'complained' : 'bounced';

/** Bounced or complained addresses get nothing; unsubscribed contacts get no marketing mail. */
export function withheldBecause(
  type: TemplateType,
  subscribed: boolean,
  suppressedAs: string | undefined,
): SuppressionReason | null {
  if (suppressedAs !== undefined) return suppressionReason(suppressedAs);
  return type === 'MARKETING' && !subscribed ? 'unsubscribed' : null;
}

export interface QueuedEmail {
  contactId: string;
  contactEmail: string;
  emailId: string;
  status: QueuedStatus;
  /** Suppressed only. */
  reason?: SuppressionReason;
  error?: string;
}

export interface QueuedBatch {
  sendId: string;
  emails: QueuedEmail[];
  timestamp: Date;
}

export interface EmailBatchDeps {
  emails: EmailsStore;
  attachments: SendAttachmentsStore;
  templates: Templates;
  domains: SenderDomains;
  renderer: Renderer;
  tokens: TrackingTokens;
  publicUrl: string;
  /** Idempotency-Key records kept with the queued emails. */
  records: SendRecords;
  /** The feed's `email.suppressed` rows, written with the withheld emails. */
  activity: ActivityStore;
  /** The email cap (README "Billing"): queued mail is taken from it before the commit. */
  caps?: BillingCaps;
}

/** Why a render failed, for QueuedEmail.error: "field: message" of each field error. */
const renderFailure = (err: AppError) =>
  (err.errors?.length ? err.errors.map((e) => `${e.field}: ${e.message}`).join('; ') : err.message).slice(0, 1000);

/** A recipient's own render failure (Liquid error, render budget, size): a 422 from rendering. */
const isRenderFailure = (err: unknown): err is AppError => err instanceof AppError && err.status === 422;

interface PendingBatch {
  projectId: string;
  sendId: string;
  emails: NewEmail[];
  /** The withheld emails' reasons (email id -> reason), for their feed rows. */
  withheld: Map<string, SuppressionReason>;
  attachments: Attachment[];
  idempotency?: SendIdempotency;
  answer: QueuedBatch;
}

/** The base64 size of an attachment in the MIME message (the 40 MB limit counts the encoded message). */
const encodedBytes = (a: Attachment) => Math.ceil(a.content.byteLength / 3) * 4;

/**
 * Renders one email per recipient of a batch (a /v1/send request or a QueueEmails call) and
 * queues them in one transaction with the batch's attachments, which are stored once.
 */
export class EmailBatches {
  /** Concurrent batches share the commit that queues their emails. */
  private readonly commits: GroupCommit<PendingBatch, Set<string>>;

  /** Batches queued together (a SendEmails call, one upsert call's sends) look their suppressions up in one query. */
  private readonly suppressions: CallBatcher<{ projectId: string; emails: string[] }, Map<string, string>>;

  constructor(private readonly d: EmailBatchDeps) {
    this.suppressions = new CallBatcher(
      async (lookups) => (await d.emails.suppressed(lookups)).map((value) => ({ ok: true as const, value })),
      { windowMs: 1, maxBatch: 200 },
    );
    // Answers the ids inserted: an email missing from it lost its dedupe key to another email.
    this.commits = new GroupCommit<PendingBatch, Set<string>>(
      () => d.emails.pool.connect(),
      async (tx, b) => (await this.write(tx, [b]))[0],
      {
        // The batches of one commit share their statements: one INSERT of every email, one of the feed rows.
        writeMany: (tx, batches) => this.write(tx, batches),
        // Without Idempotency-Key records, attachments or withheld emails' feed rows, the INSERT is all.
        oneStatement: (batches) => batches.every((b) => !b.idempotency && !b.attachments.length && !b.withheld.size),
      },
    );
  }

  private async write(tx: PoolClient, batches: PendingBatch[]): Promise<Set<string>[]> {
    for (const b of batches) {
      if (b.idempotency) await this.d.records.record(tx, b.projectId, b.idempotency, b.answer);
      if (b.emails.length) await this.d.attachments.insert(tx, b.sendId, b.attachments);
    }
    const inserted = await this.d.emails.insertMany(
      tx,
      batches.flatMap((b) => b.emails),
    );
    // A withheld email is in the feed as soon as it exists (no bus message: it never leaves the service).
    await this.d.activity.insertMany(
      tx,
      batches.flatMap((b) =>
        b.emails
          .filter((e) => inserted.has(e.id) && b.withheld.has(e.id))
          .map((e) => suppressedActivity(e, b.withheld.get(e.id)!)),
      ),
    );
    return batches.map((b) => new Set(b.emails.filter((e) => inserted.has(e.id)).map((e) => e.id)));
  }

  /** Template and overrides resolved, the sender's domain checked, subject and body parsed (422 on syntax). */
  async prepare(projectId: string, spec: ContentSpec): Promise<BatchContent> {
    const template = spec.templateId ? await this.d.templates.get(projectId, spec.templateId) : undefined;
    const from: Address | undefined =
      spec.from ??
      (template
        ? { email: template.from_email, ...(template.from_name ? { name: template.from_name } : {}) }
        : undefined);
    if (!from) {
      throw validationError([
        { field: 'from', code: 'required', message: 'from is required when the template has no sender' },
      ]);
    }
    const senderDomain = await this.d.domains.requireVerifiedSender(projectId, from.email);
    return {
      subject: this.d.renderer.compile(spec.subject ?? template!.subject, { kind: 'text', field: 'subject' }),
      body: this.d.renderer.compile(spec.body ?? template!.body, { kind: 'html', field: 'body' }),
      from,
      replyTo: spec.replyTo ?? (template?.reply_to || ''),
      type: template?.type ?? spec.type ?? 'TRANSACTIONAL',
      templateId: template?.id ?? null,
      senderDomain: senderDomain.domain,
      headers: spec.headers,
      attachments: spec.attachments ?? [],
    };
  }

  /**
   * Renders every recipient's email within one render budget, then queues them in one transaction
   * (shared with concurrent batches). A recipient whose dedupe key is already queued answers "duplicate";
   * with `perRecipientFailures` one that does not render answers "failed", otherwise the batch is a 422.
   */
  async queue(
    projectId: string,
    content: BatchContent,
    recipients: BatchRecipient[],
    origin: BatchOrigin,
    opts: QueueOptions = {},
  ): Promise<QueuedBatch> {
    const sendId = randomUUID();
    // The open and click tokens carry it: TRACKING_RECORD_DAYS counts from here without reading the email's row.
    const iat = Math.floor(Date.now() / 1000);
    const budget = this.d.renderer.budget();
    const attachmentBytes = content.attachments.reduce((n, a) => n + encodedBytes(a), 0);
    const keys = [...new Set(recipients.flatMap((r) => (r.dedupeKey ? [r.dedupeKey] : [])))];
    const [suppressed, known] = await Promise.all([
      this.suppressions.submit({ projectId, emails: recipients.map((r) => r.email) }),
      // Keys queued earlier (or earlier in this batch, added below) answer their first email.
      this.d.emails.byDedupeKeys(projectId, keys),
    ]);
    const emails: NewEmail[] = [];
    const withheld = new Map<string, SuppressionReason>();
    const queued: QueuedEmail[] = [];
    for (const r of recipients) {
      const first = r.dedupeKey ? known.get(r.dedupeKey) : undefined;
      if (first) {
        queued.push({ contactId: r.contactId, contactEmail: r.email, emailId: first, status: 'duplicate' });
        continue;
      }
      const emailId = randomUUID();
      const subToken = this.d.tokens.sign('subscription', { projectId, contactId: r.contactId, emailId });
      const urls = subscriptionUrls(this.d.publicUrl, subToken);
      const vars = { ...r.variables, email: r.email, id: r.contactId, ...urls };

      let subject: string;
      let html: string;
      let text: string;
      try {
        // A variable may hold a line break; a header never does (nodemailer encodes the rest).
        subject = (await content.subject.render(vars, budget)).replace(/[\r\n]+/g, ' ').slice(0, 998);
        html = await content.body.render(vars, budget);
        text = htmlToPlainText(html);
        if (Buffer.byteLength(html) + Buffer.byteLength(text) + attachmentBytes > MAX_MESSAGE_BYTES) {
          throw validationError([
            { field: 'body', code: 'too_big', message: 'The message would be larger than 40 MB' },
          ]);
        }
      } catch (err) {
        if (!opts.perRecipientFailures || !isRenderFailure(err)) throw err;
        const error = renderFailure(err);
        queued.push({ contactId: r.contactId, contactEmail: r.email, emailId: '', status: 'failed', error });
        continue;
      }
      const trackedHtml = addTracking(html, {
        pixelUrl: `${this.d.publicUrl}/t/o/${this.d.tokens.sign('open', { emailId, iat })}`,
        clickUrl: (url) =>
          url === urls.unsubscribeUrl || url === urls.subscribeUrl || url === urls.manageUrl
            ? undefined
            : `${this.d.publicUrl}/t/c/${this.d.tokens.sign('click', { emailId, projectId, url, iat })}`,
      });

      const blockedBy = withheldBecause(content.type, r.subscribed, suppressed.get(r.email.toLowerCase()));
      if (blockedBy) withheld.set(emailId, blockedBy);
      emails.push({
        id: emailId,
        project_id: projectId,
        contact_id: r.contactId,
        to_email: r.email,
        to_name: r.name,
        from_email: content.from.email,
        from_name: content.from.name ?? '',
        reply_to: content.replyTo,
        subject,
        html: trackedHtml,
        text,
        headers: composeHeaders({
          type: content.type,
          bodyHasUnsubscribeLink: html.includes(urls.unsubscribeUrl),
          unsubscribe: { httpsUrl: urls.unsubscribeUrl, mailto: unsubscribeMailto(content.senderDomain, subToken) },
          emailId,
          automatic: origin.source === 'workflow',
          custom: content.headers,
        }),
        template_id: content.templateId,
        type: content.type,
        message_id: `<${emailId}@${content.senderDomain}>`,
        priority: SEND_PRIORITY[origin.source],
        send_id: sendId,
        campaign_id: origin.campaignId ?? null,
        workflow_id: origin.workflowId ?? null,
        workflow_depth: (origin.workflowId && r.workflowDepth) || null,
        dedupe_key: r.dedupeKey ?? null,
        test: origin.test ?? false,
        status: blockedBy ? 'suppressed' : 'queued',
        ...(blockedBy ? { bounce_reason: blockedBy } : {}),
      });
      queued.push({
        contactId: r.contactId,
        contactEmail: r.email,
        emailId,
        ...(blockedBy ? { status: 'suppressed', reason: blockedBy } : { status: 'queued' }),
      });
      if (r.dedupeKey) known.set(r.dedupeKey, emailId);
    }
    const answer: QueuedBatch = { sendId, emails: queued, timestamp: new Date() };
    const { idempotency } = opts;
    // Withheld mail and test messages are not billed; a refused batch queues nothing (402).
    const billable = (list: NewEmail[]) => list.filter((e) => e.status === 'queued' && !e.test).length;
    const release = this.d.caps ? await this.d.caps.reserve(projectId, 'emails', billable(emails)) : undefined;
    let inserted: Set<string>;
    try {
      inserted = await this.commits.submit({
        projectId,
        sendId,
        emails,
        withheld,
        attachments: content.attachments,
        idempotency,
        answer,
      });
    } catch (err) {
      await release?.();
      throw err;
    }
    const lost = emails.filter((e) => !inserted.has(e.id));
    if (lost.length && billable(lost)) await this.d.caps?.added(projectId, 'emails', -billable(lost));
    if (lost.length) await this.answerLostKeys(projectId, queued, lost);
    return answer;
  }

  /**
   * Emails skipped at insert: a concurrent batch (or an earlier one in the same transaction) queued
   * their dedupe key first. Their recipients answer "duplicate" with the winner's id, read after commit.
   */
  private async answerLostKeys(projectId: string, queued: QueuedEmail[], lost: NewEmail[]): Promise<void> {
    const winners = await this.d.emails.byDedupeKeys(
      projectId,
      lost.map((e) => e.dedupe_key!),
    );
    const byId = new Map(lost.map((e) => [e.id, e.dedupe_key!]));
    for (const q of queued) {
      const key = byId.get(q.emailId);
      if (key === undefined) continue;
      const winner = winners.get(key);
      // The winner is committed (a conflict waits for it); missing only if deleted meanwhile.
      Object.assign(
        q,
        winner
          ? { emailId: winner, status: 'duplicate', reason: undefined }
          : { emailId: '', status: 'failed', error: 'dedupeKey: taken by an email that no longer exists' },
      );
    }
  }
}

/** The feed row of a withheld email: `email.suppressed` with the reason; its id makes it unique. */
function suppressedActivity(e: NewEmail, reason: SuppressionReason): ActivityRow {
  return {
    id: uuidv7(),
    source_id: `suppressed:${e.id}`,
    project_id: e.project_id,
    type: 'email.suppressed',
    contact_id: e.contact_id,
    email_id: e.id,
    email: e.to_email,
    name: null,
    data: {
      email: e.to_email,
      subject: e.subject,
      reason,
      ...(e.template_id ? { templateId: e.template_id } : {}),
      ...(e.campaign_id ? { campaignId: e.campaign_id } : {}),
      ...(e.workflow_id ? { workflowId: e.workflow_id } : {}),
    },
    occurred_at: new Date(),
  };
}
