import { randomUUID } from 'node:crypto';
import { GroupCommit } from '@svc/lib/group-commit';
import { validationError } from '@svc/lib/errors';
import type { EmailsStore, NewEmail } from '../store/emails-store.js';
import type { TemplateRow, TemplateType } from '../store/templates-store.js';
import type { Address } from './address.js';
import type { ContactDirectory } from './contact-directory.js';
import { composeHeaders, unsubscribeMailto } from './message-headers.js';
import { htmlToPlainText } from './plain-text.js';
import type { Renderer } from './render.js';
import type { SenderDomains } from './sender-domains.js';
import { KeyAlreadyRecorded, type RecordedSend, type SendIdempotency, type SendRecords } from './send-records.js';
import { parseSendRequest, type SendLimits } from './send-request.js';
import type { Templates } from './templates.js';
import { addTracking } from './tracking-html.js';
import { subscriptionUrls, type TrackingTokens } from './tracking-tokens.js';
import { SEND_PRIORITY } from './priority.js';

/** SPEC.md Limits: "Total message size at most 40 MB". */
const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;

export interface SendResult {
  emails: { contactId: string; contactEmail: string; emailId: string }[];
  timestamp: Date;
}

export interface SendingDeps {
  emails: EmailsStore;
  templates: Templates;
  domains: SenderDomains;
  contacts: ContactDirectory;
  renderer: Renderer;
  tokens: TrackingTokens;
  publicUrl: string;
  limits?: SendLimits;
  /** Idempotency-Key records kept with the queued emails. */
  records: SendRecords;
}

interface QueuedSend {
  projectId: string;
  emails: NewEmail[];
  idempotency?: SendIdempotency;
  result: SendResult;
}

/**
 * POST /v1/send: validates, upserts each recipient in order, renders one email per
 * recipient and queues them all in one transaction (delivery is the worker's job).
 */
export class Sending {
  /** Concurrent sends share the commit that queues their emails. */
  private readonly queue: GroupCommit<QueuedSend, void>;

  constructor(private readonly d: SendingDeps) {
    this.queue = new GroupCommit(
      () => d.emails.pool.connect(),
      async (tx, q) => {
        if (q.idempotency) await d.records.record(tx, q.projectId, q.idempotency, q.result);
        await d.emails.insertMany(tx, q.emails);
      },
    );
  }

  /** With `idempotency`, a repeat of a committed send answers the recorded result and queues nothing. */
  async send(projectId: string, input: unknown, idempotency?: SendIdempotency): Promise<RecordedSend> {
    const earlier = idempotency && (await this.d.records.replay(projectId, idempotency));
    if (earlier) return earlier;
    const req = parseSendRequest(input, this.d.limits);
    const template: TemplateRow | undefined = req.template ? await this.d.templates.get(projectId, req.template) : undefined;
    const subject = req.subject ?? template!.subject;
    const body = req.body ?? template!.body;
    const from: Address | undefined =
      req.from ?? (template ? { email: template.from_email, ...(template.from_name ? { name: template.from_name } : {}) } : undefined);
    if (!from) throw validationError([{ field: 'from', code: 'required', message: 'from is required when the template has no sender' }]);
    const replyTo = req.reply ?? (template?.reply_to || '');
    // An inline send is transactional; a template send is of the template's type.
    const type: TemplateType = template?.type ?? 'TRANSACTIONAL';

    const senderDomain = await this.d.domains.requireVerifiedSender(projectId, from.email);
    // Parsed once for the whole request; every render of the request draws on one time budget.
    const subjectTemplate = this.d.renderer.compile(subject, { kind: 'text', field: 'subject' });
    const bodyTemplate = this.d.renderer.compile(body, { kind: 'html', field: 'body' });
    const budget = this.d.renderer.budget();
    const attachmentBytes = (req.attachments ?? []).reduce((n, a) => n + a.content.length, 0);
    const suppressed = await this.d.emails.suppressed(projectId, req.to.map((t) => t.email));

    const queued: NewEmail[] = [];
    const result: SendResult['emails'] = [];
    // SPEC.md rule 2: one recipient after another, each with its own upsert and rendering.
    for (const to of req.to) {
      const { contact, oneOff } = await this.d.contacts.upsert(projectId, to.email, { subscribed: req.subscribed, data: req.data });
      const emailId = randomUUID();
      const subToken = this.d.tokens.sign('subscription', { projectId, contactId: contact.id, emailId });
      const urls = subscriptionUrls(this.d.publicUrl, subToken);
      const vars = { ...contact.data, ...oneOff, email: contact.email, id: contact.id, ...urls };

      // A variable may hold a line break; a header never does (nodemailer encodes the rest).
      const renderedSubject = (await subjectTemplate.render(vars, budget)).replace(/[\r\n]+/g, ' ').slice(0, 998);
      const html = await bodyTemplate.render(vars, budget);
      const text = htmlToPlainText(html);
      if (Buffer.byteLength(html) + Buffer.byteLength(text) + attachmentBytes > MAX_MESSAGE_BYTES) {
        throw validationError([{ field: 'body', code: 'too_big', message: 'The message would be larger than 40 MB' }]);
      }
      const trackedHtml = addTracking(html, {
        pixelUrl: `${this.d.publicUrl}/t/o/${this.d.tokens.sign('open', { emailId })}`,
        clickUrl: (url) => (Object.values(urls).includes(url) ? undefined : `${this.d.publicUrl}/t/c/${this.d.tokens.sign('click', { emailId, url })}`),
      });

      // Bounced or complained addresses get nothing; unsubscribed contacts get no marketing mail.
      const blockedBy = suppressed.has(contact.email.toLowerCase())
        ? 'suppressed: earlier bounce or complaint'
        : type === 'MARKETING' && !contact.subscribed
          ? 'contact is unsubscribed'
          : null;
      queued.push({
        id: emailId,
        project_id: projectId,
        contact_id: contact.id,
        to_email: contact.email,
        to_name: to.name ?? '',
        from_email: from.email,
        from_name: from.name ?? '',
        reply_to: replyTo,
        subject: renderedSubject,
        html: trackedHtml,
        text,
        headers: composeHeaders({
          type,
          bodyHasUnsubscribeLink: html.includes(urls.unsubscribeUrl),
          unsubscribe: { httpsUrl: urls.unsubscribeUrl, mailto: unsubscribeMailto(senderDomain.domain, subToken) },
          emailId,
          custom: req.headers,
        }),
        attachments: req.attachments ?? [],
        template_id: template?.id ?? null,
        type,
        message_id: `<${emailId}@${senderDomain.domain}>`,
        priority: SEND_PRIORITY.transactional,
        status: blockedBy ? 'suppressed' : 'queued',
        ...(blockedBy ? { bounce_reason: blockedBy } : {}),
      });
      result.push({ contactId: contact.id, contactEmail: contact.email, emailId });
    }
    const sent: SendResult = { emails: result, timestamp: new Date() };
    try {
      await this.queue.submit({ projectId, emails: queued, idempotency, result: sent });
    } catch (err) {
      // A concurrent duplicate committed first: its answer stands, this one's emails were rolled back.
      const winner = err instanceof KeyAlreadyRecorded && (await this.d.records.replay(projectId, idempotency!));
      if (winner) return winner;
      throw err;
    }
    return sent;
  }
}
