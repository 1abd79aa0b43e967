import { randomUUID } from 'node:crypto';
import { simpleParser } from 'mailparser';
import type { Pool } from '@svc/lib/db';
import type { Logger } from '@svc/lib/logger';
import { enqueueMessage } from '@svc/lib/outbox';
import type { DomainsStore } from '../store/domains-store.js';
import type { ContactDirectory } from './contact-directory.js';
import { automaticMail } from './auto-submitted.js';
import { emailLifecycleSubject } from '@svc/proto/topics/messaging';
import { lifecyclePayload } from './email-events.js';
import type { Tracking } from './tracking.js';

/** An SMTP refusal: the listener answers it to the sending server. */
export class InboundRefusal extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

export interface InboundMessage {
  /** Envelope sender (MAIL FROM). */
  from: string;
  /** Envelope recipients (RCPT TO), each accepted by `recipientProjects`. */
  to: string[];
  raw: Buffer;
}

/** The local part List-Unsubscribe's mailto names (message-headers.ts: `unsubscribe@<sender domain>`). */
const UNSUBSCRIBE_LOCAL_PART = 'unsubscribe';
/** How much of the text part the `email.received` event keeps. */
const MAX_TEXT = 2000;

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase();
const localPartOf = (address: string) => address.slice(0, address.lastIndexOf('@')).toLowerCase();

/**
 * Mail received for the projects' verified domains (README "Inbound mail"): to `unsubscribe@` with the
 * token in the subject it unsubscribes the recipient the token names; anything else from a contact is an
 * `emails.received` lifecycle message for that contact (activity feed, `email.received` event, workflows: not for
 * mail sent automatically, see auto-submitted.ts).
 */
export class InboundMail {
  constructor(
    private readonly d: {
      pool: Pool;
      domains: DomainsStore;
      contacts: ContactDirectory;
      tracking: Tracking;
      logger: Logger;
    },
  ) {}

  /** RCPT TO: a domain no project has verified is refused (550): this is not an open relay. */
  async recipientProjects(address: string): Promise<string[]> {
    const projects = address.includes('@') ? await this.d.domains.projectsCovering(domainOf(address)) : [];
    if (!projects.length) throw new InboundRefusal(550, `5.1.1 <${address}>: no such domain here`);
    return projects;
  }

  async receive(m: InboundMessage): Promise<{ unsubscribed: number; recorded: number }> {
    // A parse failure is the message's own (nesting or header limits): permanent, or the sender retries for days.
    const parsed = await simpleParser(m.raw).catch(() => {
      throw new InboundRefusal(554, '5.6.0 Malformed message');
    });
    const subject = parsed.subject ?? '';
    let unsubscribed = 0;
    const others = m.to.filter((to) => localPartOf(to) !== UNSUBSCRIBE_LOCAL_PART);
    if (others.length < m.to.length) {
      const token = /\bunsubscribe\s+(\S+)/i.exec(subject)?.[1];
      if (!token) throw new InboundRefusal(550, '5.7.1 The subject must be "unsubscribe <token>"');
      try {
        await this.d.tracking.subscription(token, false);
      } catch {
        throw new InboundRefusal(550, '5.7.1 Unknown or invalid unsubscribe token');
      }
      unsubscribed++;
    }
    const sender = (parsed.from?.value[0]?.address || m.from).trim();
    if (!others.length || !sender) return { unsubscribed, recorded: 0 };
    const projects = new Set((await Promise.all(others.map((to) => this.recipientProjects(to)))).flat());
    // An auto-reply is recorded (activity, the contact's events) but starts no workflow (EmailLifecycle.automatic).
    const automatic = automaticMail(parsed.headerLines ?? []);
    let recorded = 0;
    for (const projectId of projects) {
      const contact = await this.d.contacts.findByEmail(projectId, sender);
      if (!contact) {
        this.d.logger.info(
          { projectId },
          'inbound mail from an address that is no contact of the project: not recorded',
        );
        continue;
      }
      const payload = lifecyclePayload(
        {
          id: randomUUID(),
          project_id: projectId,
          contact_id: contact.id,
          to_email: contact.email,
          subject,
          template_id: null,
        },
        'received',
        {
          from: sender,
          to: others,
          messageId: parsed.messageId,
          inReplyTo: parsed.inReplyTo,
          text: (parsed.text ?? '').slice(0, MAX_TEXT),
          ...(automatic ? { automatic } : {}),
        },
      );
      if (automatic) {
        payload.automatic = true;
        this.d.logger.info({ projectId, header: automatic }, 'inbound mail sent automatically: starts no workflow');
      }
      await enqueueMessage(this.d.pool, { subject: emailLifecycleSubject('received'), payload });
      recorded++;
    }
    return { unsubscribed, recorded };
  }
}
