import { withTransaction, type Pool } from '@svc/lib/db';
import { notFound } from '@svc/lib/errors';
import { trackingAutomatedHits } from '@svc/lib/metrics';
import { enqueueMessage } from '@svc/lib/outbox';
import type { EmailsStore } from '../store/emails-store.js';
import type { AutomatedHits } from './automated-hits.js';
import type { ContactDirectory } from './contact-directory.js';
import { lifecycleMessage } from './email-events.js';
import type { TrackingHits } from './tracking-hits.js';
import type { TrackingTokens } from './tracking-tokens.js';

const invalidLink = (token: string) => notFound('Link', token.slice(0, 40));

/** "a***@example.com": enough for the recipient to recognise, little for anyone else. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at < 1) return '***';
  return `${email[0]}***${email.slice(at)}`;
}

/**
 * Opens, clicks and the subscription links. A recorded open or click is an event, the first is flagged; `automated`
 * tells a scanner's hits (counted in a metric only), then `hits` decides which are recorded (not a repeat within its
 * window, within the client's budget).
 */
export class Tracking {
  constructor(
    private readonly pool: Pool,
    private readonly emails: EmailsStore,
    private readonly tokens: TrackingTokens,
    private readonly contacts: ContactDirectory,
    private readonly hits: TrackingHits,
    private readonly automated: AutomatedHits,
  ) {}

  /**
   * `checkOnly`: the token is checked and nothing recorded (a HEAD request is no open); an automated hit or a repeat
   * neither.
   */
  async open(token: string, client: { userAgent?: string; ip?: string }, checkOnly = false): Promise<void> {
    const t = this.tokens.verify('open', token);
    if (!t) throw invalidLink(token);
    if (checkOnly) return;
    const reason = this.automated.open(client);
    if (reason) {
      trackingAutomatedHits.inc({ kind: 'open', reason });
      return;
    }
    if (!(await this.hits.recordOpen(t.emailId, client.ip, t.iat))) return;
    await withTransaction(this.pool, async (tx) => {
      const email = await this.emails.recordOpen(tx, t.emailId);
      if (!email) throw invalidLink(token);
      const m = lifecycleMessage(email, 'open', { isFirstOpen: email.is_first, ...clientData(client) });
      await enqueueMessage(tx, m);
    });
  }

  /**
   * The target URL; it was signed into the token, so this is no open redirect. `checkOnly`: nothing is recorded
   * (a HEAD request or a browser's prefetch is no click), nor for an automated hit or a repeat within the window.
   */
  async click(token: string, client: { userAgent?: string; ip?: string }, checkOnly = false): Promise<string> {
    const t = this.tokens.verify('click', token);
    if (!t) throw invalidLink(token);
    if (checkOnly) return t.url;
    // Before the repeat check: a scanner's hit takes no repeat window from the person's click that follows it.
    const reason = await this.automated.click(t.emailId, t.url, client);
    if (reason) {
      trackingAutomatedHits.inc({ kind: 'click', reason });
      return t.url;
    }
    if (!(await this.hits.recordClick(t.emailId, t.url, client.ip, t.iat))) return t.url;
    await withTransaction(this.pool, async (tx) => {
      const email = await this.emails.recordClick(tx, t.emailId);
      if (!email) return; // the email record is gone; the link still works
      const m = lifecycleMessage(email, 'click', { url: t.url, isFirstClick: email.is_first, ...clientData(client) });
      await enqueueMessage(tx, m);
    });
    return t.url;
  }

  /** Reads (subscribed undefined) or sets the recipient's subscription; contacts emits the flip event. */
  async subscription(
    token: string,
    subscribed?: boolean,
  ): Promise<{ maskedEmail: string; subscribed: boolean; changed: boolean }> {
    const t = this.tokens.verify('subscription', token);
    if (!t) throw invalidLink(token);
    const contact = await this.contacts.get(t.projectId, t.contactId);
    if (!contact) throw invalidLink(token);
    if (subscribed === undefined || contact.subscribed === subscribed) {
      return { maskedEmail: maskEmail(contact.email), subscribed: contact.subscribed, changed: false };
    }
    const updated = await this.contacts.setSubscribed(t.projectId, t.contactId, subscribed);
    return { maskedEmail: maskEmail(updated.email), subscribed: updated.subscribed, changed: true };
  }
}

function clientData(client: { userAgent?: string; ip?: string }): Record<string, string> {
  return client.userAgent ? { userAgent: client.userAgent.slice(0, 300) } : {};
}
