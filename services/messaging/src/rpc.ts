import { create, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { settleItems } from '@svc/lib/batch-items';
import { billingPeriod } from '@svc/lib/billing-caps';
import { AppError, validationError } from '@svc/lib/errors';
import { isDependencyUnavailable } from '@svc/lib/dependency-errors';
import type { Logger } from '@svc/lib/logger';
import type { EmailBilling } from './domain/email-billing.js';
import type { ConnectRouter } from '@connectrpc/connect';
import {
  ActivitySchema,
  DomainSchema,
  EmailSummarySchema,
  LinkRefusal,
  MessagingService,
  SendEmailRequestSchema,
  type SendEmailResponseSchema,
  SendSource,
  TemplateSchema,
  type Address,
  type Attachment,
  type QueueEmailsRequest,
  type SendEmailRequest,
  type TemplateFields,
} from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { ActivityFeed } from './domain/activity-feed.js';
import type { AddressInput } from './domain/address.js';
import type { DevMail } from './domain/dev-mail.js';
import type { EmailHistory } from './domain/email-history.js';
import type { EmailTimeseries } from './domain/email-timeseries.js';
import { parseVerifyRequest, verifyEmail, type DnsLookup } from './domain/email-verification.js';
import type { SendSource as Source } from './domain/priority.js';
import type { ProviderWebhooks } from './domain/provider-webhooks.js';
import { THRESHOLDS, WINDOW_DAYS, type Reputation } from './domain/reputation.js';
import type { SendingSuspensions } from './domain/sending-suspension.js';
import type { QueueInput } from './domain/queue-request.js';
import type { SenderDomains } from './domain/sender-domains.js';
import type { SendInput } from './domain/send-request.js';
import type { Sending } from './domain/sending.js';
import type { TemplateInput, Templates } from './domain/templates.js';
import type { LinkRefusal as Refusal } from './domain/link-safety.js';
import type { Tracking } from './domain/tracking.js';
import type { ActivityRow } from './store/activity-store.js';
import type { DomainRow } from './store/domains-store.js';
import type { EmailSummaryRow } from './store/emails-store.js';
import type { TemplateRow } from './store/templates-store.js';
import type { Uploads } from './domain/uploads.js';
import type { UploadRow } from './store/uploads-store.js';

const upload = (u: UploadRow) => ({
  id: u.id,
  projectId: u.project_id,
  contentType: u.content_type,
  size: BigInt(u.size),
  createdAt: timestampFromDate(u.created_at),
});

export interface MessagingParts {
  logger: Logger;
  domains: SenderDomains;
  templates: Templates;
  sending: Sending;
  tracking: Tracking;
  webhooks: ProviderWebhooks;
  activity: ActivityFeed;
  timeseries: EmailTimeseries;
  /** GET /emails and /emails/{id}. */
  history: EmailHistory;
  dns: DnsLookup;
  /** Embedded mode only: the local sink's mail, per project. */
  devMail?: DevMail;
  /** POST /uploads/image and GET /u/{id}. */
  uploads: Uploads;
  /** Email usage and the campaign pre-check against the cap (README "Billing"). */
  billing: EmailBilling;
  reputation: Reputation;
  suspensions: Pick<SendingSuspensions, 'check'>;
}

const ts = (d: Date | null | undefined) => (d ? timestampFromDate(d) : undefined);

// Decoding: messages to the domain's inputs. JSON types were checked by the caller's encoding;
// every rule is the domain's.

function addressInput(a: Address | undefined): AddressInput | undefined {
  if (a?.form.case === 'text') return a.form.value;
  if (a?.form.case === 'mailbox') return { email: a.form.value.email, name: a.form.value.name };
  return undefined;
}

const attachmentInputs = (list: Attachment[]) =>
  list.length
    ? list.map((a) => ({
        filename: a.filename,
        content: a.content,
        contentType: a.contentType,
        contentId: a.contentId,
        disposition: a.disposition,
      }))
    : undefined;

const headersInput = (headers: Record<string, string>) => (Object.keys(headers).length ? headers : undefined);

const sendInput = (req: SendEmailRequest): SendInput => ({
  to: req.to.map(addressInput) as AddressInput[],
  subject: req.subject,
  body: req.body,
  template: req.template,
  from: addressInput(req.from),
  name: req.name,
  subscribed: req.subscribed,
  data: req.data,
  headers: headersInput(req.headers),
  reply: req.reply,
  attachments: attachmentInputs(req.attachments),
});

/** SendEmails takes at most this many requests per call. */
const MAX_SEND_ITEMS = 100;

async function sendEmail(
  sending: Sending,
  req: SendEmailRequest,
): Promise<MessageInitShape<typeof SendEmailResponseSchema>> {
  const idem = req.idempotencyKey ? { key: req.idempotencyKey, fingerprint: req.idempotencyFingerprint } : undefined;
  const r = await sending.send(req.projectId, sendInput(req), idem);
  return {
    emails: r.emails.map((e) => ({
      contactId: e.contactId,
      contactEmail: e.contactEmail,
      emailId: e.emailId,
      status: e.status ?? 'queued',
      reason: e.reason ?? '',
    })),
    timestamp: timestampFromDate(r.timestamp),
    replayed: r.replayed ?? false,
  };
}

/** A SendEmails item: logged like a unary call (which the RPC interceptors log), under its own request id. */
async function sendItem(parts: MessagingParts, req: SendEmailRequest) {
  const started = performance.now();
  try {
    const out = await sendEmail(parts.sending, req);
    parts.logger.debug({ procedure: 'SendEmails', ms: performance.now() - started }, 'send handled');
    return out;
  } catch (err) {
    if (!(err instanceof AppError) && !isDependencyUnavailable(err)) parts.logger.error({ err }, 'send failed');
    throw err;
  }
}

const templateInput = (f: TemplateFields | undefined): TemplateInput => ({
  name: f?.name,
  description: f?.description,
  subject: f?.subject,
  body: f?.body,
  from: addressInput(f?.from),
  fromName: f?.fromName,
  replyTo: f?.replyTo,
  type: f?.type,
});

const LINK_REFUSALS: Record<Refusal, LinkRefusal> = {
  project_suspended: LinkRefusal.PROJECT_SUSPENDED,
  project_deleted: LinkRefusal.PROJECT_DELETED,
  blocked_domain: LinkRefusal.BLOCKED_DOMAIN,
  unsafe_url: LinkRefusal.UNSAFE_URL,
};

const SOURCES: Record<SendSource, Source> = {
  [SendSource.UNSPECIFIED]: 'transactional',
  [SendSource.TRANSACTIONAL]: 'transactional',
  [SendSource.WORKFLOW]: 'workflow',
  [SendSource.CAMPAIGN]: 'campaign',
};

function queueInput(req: QueueEmailsRequest): QueueInput {
  const c = req.content;
  return {
    content: {
      templateId: c?.templateId,
      subject: c?.subject,
      body: c?.body,
      from: c?.from && { email: c.from.email, name: c.from.name },
      replyTo: c?.replyTo,
      type: c?.type,
      headers: headersInput(c?.headers ?? {}),
      attachments: attachmentInputs(c?.attachments ?? []),
    },
    recipients: req.recipients.map((r) => ({ ...r, variables: r.variables ?? {} })),
    source: SOURCES[req.source] ?? 'transactional',
    campaignId: req.campaignId,
    workflowId: req.workflowId,
    test: req.test,
  };
}

function domain(parts: MessagingParts, d: DomainRow) {
  return create(DomainSchema, {
    id: d.id,
    projectId: d.project_id,
    domain: d.domain,
    status: d.status,
    records: parts.domains.records(d),
    dkimSelector: d.dkim_selector,
    createdAt: ts(d.created_at),
    verifiedAt: ts(d.verified_at),
    lastCheckedAt: ts(d.last_checked_at),
  });
}

const template = (t: TemplateRow) =>
  create(TemplateSchema, {
    id: t.id,
    projectId: t.project_id,
    name: t.name,
    description: t.description,
    subject: t.subject,
    body: t.body,
    fromEmail: t.from_email,
    fromName: t.from_name,
    replyTo: t.reply_to,
    type: t.type,
    createdAt: ts(t.created_at),
    updatedAt: ts(t.updated_at),
  });

const activity = (a: ActivityRow) =>
  create(ActivitySchema, {
    id: a.id,
    type: a.type,
    contactId: a.contact_id ?? '',
    emailId: a.email_id ?? '',
    email: a.email ?? '',
    name: a.name ?? '',
    data: a.data as JsonObject,
    occurredAt: ts(a.occurred_at),
  });

const emailSummary = (e: EmailSummaryRow, reason: string | null) =>
  create(EmailSummarySchema, {
    id: e.id,
    contactId: e.contact_id,
    to: e.to_email,
    from: e.from_email,
    subject: e.subject,
    status: e.status,
    reason: reason ?? '',
    type: e.type,
    templateId: e.template_id ?? '',
    campaignId: e.campaign_id ?? '',
    workflowId: e.workflow_id ?? '',
    attempts: e.attempts,
    openCount: e.open_count,
    clickCount: e.click_count,
    test: e.test,
    createdAt: ts(e.created_at),
    sentAt: ts(e.sent_at),
    lastError: e.last_error ?? '',
    messageId: e.message_id,
  });

/** The paging part of a keyset-paged answer (the activity feed, the email history). */
const cursorPage = (page: { cursor: string; hasMore: boolean; total: number }) => ({
  cursor: page.cursor,
  hasMore: page.hasMore,
  total: BigInt(page.total),
});

export function messagingRoutes(parts: MessagingParts) {
  return (router: ConnectRouter) =>
    router.service(MessagingService, {
      async createDomain(req) {
        return { domain: domain(parts, await parts.domains.create(req.projectId, req.domain)) };
      },
      async listDomains(req) {
        return { domains: (await parts.domains.list(req.projectId)).map((d) => domain(parts, d)) };
      },
      async verifyDomain(req) {
        return { domain: domain(parts, await parts.domains.verifyNow(req.projectId, req.id)) };
      },
      async deleteDomain(req) {
        await parts.domains.delete(req.projectId, req.id);
        return {};
      },
      async checkSender(req) {
        if (req.forSending) await parts.suspensions.check(req.projectId);
        const verified = await parts.domains.requireVerifiedSender(req.projectId, req.from).then(
          () => true,
          () => false,
        );
        return { verified };
      },

      async listTemplates(req) {
        const page = await parts.templates.list(req.projectId, {
          page: req.page || undefined,
          pageSize: req.pageSize || undefined,
          type: req.type || undefined,
          search: req.search || undefined,
          sort: req.sort || undefined,
          dir: req.dir || undefined,
        });
        return {
          templates: page.rows.map(template),
          total: BigInt(page.total),
          page: page.page,
          pageSize: page.pageSize,
          totalPages: page.totalPages,
        };
      },
      async createTemplate(req) {
        return { template: template(await parts.templates.create(req.projectId, templateInput(req.fields))) };
      },
      async getTemplate(req) {
        const row = req.unlessDeleting
          ? await parts.templates.getUnlessDeleting(req.projectId, req.id)
          : await parts.templates.get(req.projectId, req.id);
        return { template: template(row) };
      },
      async updateTemplate(req) {
        return { template: template(await parts.templates.update(req.projectId, req.id, templateInput(req.fields))) };
      },
      async deleteTemplate(req) {
        await parts.templates.delete(req.projectId, req.id);
        return {};
      },
      async duplicateTemplate(req) {
        return { template: template(await parts.templates.duplicate(req.projectId, req.id)) };
      },
      async previewTemplate(req) {
        if (req.parseOnly) {
          parts.templates.parse({ subject: req.subject, body: req.body });
          return { subject: '', body: '' };
        }
        const vars: Record<string, unknown> = { ...(req.data ?? {}) };
        return parts.templates.preview({ subject: req.subject, body: req.body }, vars);
      },
      async getTemplateUsage(req) {
        await parts.templates.get(req.projectId, req.id);
        // A campaign has no template field, and SEND_EMAIL steps live in workflows (the gateway asks it).
        return { campaigns: [], workflowSteps: [] };
      },

      sendEmail: (req) => sendEmail(parts.sending, req),
      async sendEmails(req) {
        if (req.items.length > MAX_SEND_ITEMS) {
          throw validationError([
            { field: 'items', code: 'too_big', message: `At most ${MAX_SEND_ITEMS} items per call` },
          ]);
        }
        // Every item starts in this tick: their contacts share one upsert call, their emails one commit.
        const outcomes = await settleItems(req.items, 'SendEmails item', (i) =>
          sendItem(parts, i.request ?? create(SendEmailRequestSchema)),
        );
        return {
          results: outcomes.map((o) =>
            o.ok
              ? { result: { case: 'sent' as const, value: o.value } }
              : { result: { case: 'error' as const, value: o.error } },
          ),
        };
      },
      async queueEmails(req) {
        const r = await parts.sending.queue(req.projectId, queueInput(req));
        return {
          emails: r.emails.map((e) => ({
            contactId: e.contactId,
            emailId: e.emailId,
            status: e.status,
            error: e.error ?? '',
            reason: e.reason ?? '',
          })),
          sendId: r.sendId,
        };
      },
      async verifyEmail(req) {
        const r = await verifyEmail(parseVerifyRequest({ email: req.email }), parts.dns);
        return { result: { ...r, suggestion: r.suggestion ?? '' } };
      },

      async trackOpen(req) {
        await parts.tracking.open(req.token, { userAgent: req.userAgent, ip: req.ip }, req.checkOnly);
        return {};
      },
      async trackClick(req) {
        const client = { userAgent: req.userAgent, ip: req.ip };
        const click = await parts.tracking.click(req.token, client, req.checkOnly);
        return { url: click.url, refused: click.refused ? LINK_REFUSALS[click.refused] : LinkRefusal.UNSPECIFIED };
      },
      async setSubscription(req) {
        return parts.tracking.subscription(req.token, req.subscribed);
      },
      async handleProviderWebhook(req) {
        return parts.webhooks.handle(req.events);
      },

      async listActivity(req) {
        const page = await parts.activity.list(req.projectId, {
          limit: req.limit || undefined,
          cursor: req.cursor || undefined,
          type: req.type || undefined,
          contactId: req.contactId || undefined,
        });
        return { items: page.items.map(activity), ...cursorPage(page) };
      },
      async getActivityStats(req) {
        const s = await parts.activity.stats(req.projectId, req.days || undefined);
        const e = s.emails;
        return {
          days: s.days,
          total: BigInt(s.total),
          byType: s.byType.map((t) => ({ type: t.type, count: BigInt(t.count) })),
          emails: Object.fromEntries(Object.entries(e).map(([k, v]) => [k, BigInt(v)])),
        };
      },
      async getRecentActivityCount(req) {
        const r = await parts.activity.recentCount(req.projectId, req.minutes || undefined);
        return { count: BigInt(r.count), since: timestampFromDate(r.since) };
      },
      async listActivityTypes(req) {
        return { types: await parts.activity.types(req.projectId) };
      },
      async listUpcoming(req) {
        const items = await parts.activity.upcoming(req.projectId);
        return {
          items: items.map((i) => ({ kind: i.kind, id: i.id, name: i.name, dueAt: timestampFromDate(i.dueAt) })),
        };
      },
      async getEmailTimeseries(req) {
        const t = await parts.timeseries.get(req.projectId, {
          from: req.from || undefined,
          to: req.to || undefined,
          interval: req.interval || undefined,
          campaignId: req.campaignId || undefined,
        });
        return {
          interval: t.interval,
          from: timestampFromDate(t.from),
          to: timestampFromDate(t.to),
          buckets: t.data.map(({ bucket, sent, delivered, opened, clicked, bounced }) => ({
            start: timestampFromDate(bucket),
            sent: BigInt(sent),
            delivered: BigInt(delivered),
            opened: BigInt(opened),
            clicked: BigInt(clicked),
            bounced: BigInt(bounced),
          })),
        };
      },

      async getEmail(req) {
        const d = await parts.history.get(req.projectId, req.id);
        return {
          email: emailSummary(d.email, d.reason),
          attempts: d.attempts.map((a) => ({
            attempt: a.attempt,
            outcome: a.outcome,
            smtpCode: a.smtp_code ?? 0,
            smtpResponse: a.smtp_response,
            at: timestampFromDate(a.at),
          })),
          timeline: d.timeline.map((t) => ({ type: t.type, at: timestampFromDate(t.at), detail: t.detail })),
        };
      },
      async listEmails(req) {
        const page = await parts.history.list(req.projectId, {
          limit: req.limit || undefined,
          cursor: req.cursor || undefined,
          status: req.status || undefined,
          contactId: req.contactId || undefined,
          templateId: req.templateId || undefined,
          campaignId: req.campaignId || undefined,
          from: req.from || undefined,
          to: req.to || undefined,
        });
        return { emails: page.items.map((i) => emailSummary(i.email, i.reason)), ...cursorPage(page) };
      },

      async getSendingReputation(req) {
        const windows = await parts.reputation.windows(req.projectId);
        return {
          windows: windows.map((w) => ({
            ...w,
            sent: BigInt(w.sent),
            bounced: BigInt(w.bounced),
            complained: BigInt(w.complained),
          })),
          bounceThreshold: THRESHOLDS.bounceRate,
          complaintThreshold: THRESHOLDS.complaintRate,
          minimumVolume: BigInt(parts.reputation.minVolume),
          judgedDays: WINDOW_DAYS[0],
        };
      },

      async createUpload(req) {
        return { upload: upload(await parts.uploads.create(req.projectId, Buffer.from(req.content))) };
      },
      async getEmailUsage(req) {
        const since = req.since ? timestampDate(req.since) : billingPeriod().start;
        return { emails: BigInt(await parts.billing.used(req.projectId, since)) };
      },
      async checkEmailAllowance(req) {
        const a = await parts.billing.allowance(req.projectId, Number(req.emails));
        return {
          allowed: a.allowed,
          used: BigInt(a.used),
          ...(a.limit !== undefined ? { limit: BigInt(a.limit) } : {}),
        };
      },
      async getUpload(req) {
        const u = await parts.uploads.get(req.id);
        return { upload: upload(u), content: u.bytes };
      },

      async listDevMail(req) {
        if (!parts.devMail) return { messages: [], enabled: false };
        const limit = Math.min(Math.max(req.limit || 50, 1), 200);
        const mail = await parts.devMail.list(req.projectIds, '', limit);
        const messages = mail.map((m) => ({
          id: m.id,
          from: m.from,
          to: m.to,
          subject: m.subject,
          text: m.text,
          html: m.html,
          headers: Object.fromEntries(m.headers.map((h) => [h.name.toLowerCase(), h.value])),
          receivedAt: timestampFromDate(m.receivedAt),
          size: m.size,
        }));
        return { messages, enabled: true };
      },
    });
}
