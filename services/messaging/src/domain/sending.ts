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
import { parseSendRequest, type SendLimits } from './send-request.js';
import type { Templates } from './templates.js';
import { addTracking } from './tracking-html.js';
import { subscriptionUrls, type TrackingTokens } from './tracking-tokens.js';

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
}

/**
 * POST /v1/send: validates, upserts each recipient in order, renders one email per
 * recipient and queues them all in one transaction (delivery is the worker's job).
 */
export class Sending {
  /** Concurrent sends share the commit that queues their emails. */
  private readonly queue: GroupCommit<NewEmail[], void>;

  constructor(private readonly d: SendingDeps) {
    this.queue = new GroupCommit(() => d.emails.pool.connect(), (tx, emails) => d.emails.insertMany(tx, emails));
  }

  async send(projectId: string, input: unknown): Promise<SendResult> {
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
    this.d.renderer.validate(subject, { field: 'subject' });
    this.d.renderer.validate(body, { field: 'body' });
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
      const renderedSubject = (await this.d.renderer.render(subject, vars, { kind: 'text', field: 'subject' })).replace(/[\r\n]+/g, ' ').slice(0, 998);
      const html = await this.d.renderer.render(body, vars, { kind: 'html', field: 'body' });
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
        status: blockedBy ? 'suppressed' : 'queued',
        ...(blockedBy ? { bounce_reason: blockedBy } : {}),
      });
      result.push({ contactId: contact.id, contactEmail: contact.email, emailId });
    }
    await this.queue.submit(queued);
    return { emails: result, timestamp: new Date() };
  }
}
