import { withTransaction, type Pool } from '@svc/lib/db';
import { notFound } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { trackingAutomatedHits, trackingLinksRefused } from '@svc/lib/metrics';
import { enqueueMessage } from '@svc/lib/outbox';
import type { EmailsStore } from '../store/emails-store.js';
import type { AutomatedHits } from './automated-hits.js';
import type { ContactDirectory } from './contact-directory.js';
import { lifecycleMessage } from './email-events.js';
import { type BlockedDomains, type LinkRefusal, webDestination } from './link-safety.js';
import type { SuspensionState } from './sending-suspension.js';
import type { TrackingHits } from './tracking-hits.js';
import type { TrackingTokens } from './tracking-tokens.js';

const invalidLink = (token: string) => notFound('Link', token.slice(0, 40));

/** "a***@example.com": enough for the recipient to recognise, little for anyone else. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at < 1) return '***';
  return `${email[0]}***${email.slice(at)}`;
}

/** Where a click learns whether the sending project still stands: the send path's cached view (SendingSuspensions). */
export interface ProjectStanding {
  state(projectId: string): Promise<Pick<SuspensionState, 'active' | 'deleted'>>;
}

/** What decides that a tracked link shows a warning page instead of redirecting (link-safety.ts). */
export interface LinkGuard {
  standing: ProjectStanding;
  blocked: BlockedDomains;
  /** How long a click waits for the standing (standingWaitMs); STANDING_WAIT_MS unless given. */
  waitMs?: number;
}

/**
 * How long a click waits for its project's standing (identity, when not cached) before it redirects without it. The
 * RPC's own deadline (RPC_TIMEOUT_MS) is the gateway's too: a click waiting on a hung identity for it would answer
 * the person 503 after 30 s, not fail open.
 */
export const STANDING_WAIT_MS = 3000;

/** STANDING_WAIT_MS, or half the RPC deadline when that is shorter: the gateway's call must outlast the wait. */
export const standingWaitMs = (rpcTimeoutMs: number) => Math.min(STANDING_WAIT_MS, Math.floor(rpcTimeoutMs / 2));

/** `work`'s answer, or undefined when it fails or has none within `ms` (`work` goes on; a cache keeps its answer). */
async function answerWithin<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([work.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Click {
  url: string;
  /** Set: the link must not redirect (the gateway shows `url` as text on a warning page). */
  refused?: LinkRefusal;
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
    private readonly guard: LinkGuard,
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
      if (!email) return; // the email record is gone (its project wiped): the pixel still answers, as a link does
      const m = lifecycleMessage(email, 'open', { isFirstOpen: email.is_first, ...clientData(client) });
      await enqueueMessage(tx, m);
    });
  }

  /**
   * The target URL; it was signed into the token, so nobody can make the platform redirect to a URL of their choice.
   * A sender can, to any URL of its own mail: so the link is refused (no redirect, nothing recorded) when its project
   * is suspended or deleted, or the URL is no plain web address or is in a blocked domain. `checkOnly`: nothing is
   * recorded (a HEAD request or a browser's prefetch is no click), nor for an automated hit or a repeat within the
   * window.
   */
  async click(token: string, client: { userAgent?: string; ip?: string }, checkOnly = false): Promise<Click> {
    const t = this.tokens.verify('click', token);
    if (!t) throw invalidLink(token);
    const refused = await this.refusal(t.emailId, t.projectId, t.url);
    if (refused) {
      trackingLinksRefused.inc({ reason: refused });
      return { url: t.url, refused };
    }
    const url = { url: t.url };
    // An aged link records nothing (TRACKING_RECORD_DAYS), decided from the token: no burst mark (a Redis call) either.
    if (checkOnly || this.hits.aged(t.iat)) return url;
    // Before the repeat check: a scanner's hit takes no repeat window from the person's click that follows it.
    const reason = await this.automated.click(t.emailId, t.url, client);
    if (reason) {
      trackingAutomatedHits.inc({ kind: 'click', reason });
      return url;
    }
    if (!(await this.hits.recordClick(t.emailId, t.url, client.ip, t.iat))) return url;
    await withTransaction(this.pool, async (tx) => {
      const email = await this.emails.recordClick(tx, t.emailId);
      if (!email) return; // the email record is gone; the link still works
      const m = lifecycleMessage(email, 'click', { url: t.url, isFirstClick: email.is_first, ...clientData(client) });
      await enqueueMessage(tx, m);
    });
    return url;
  }

  /**
   * Why the link must not redirect, if it must not. The URL and the blocked domains are judged from the token alone;
   * the project's standing is a map lookup in the common case (cached, dropped by identity's bus messages). Tokens
   * minted before they carried the project id name it through their email row: with the row gone (the project
   * wiped) the project is unknown and only the URL is judged. Fail-open: when identity (or this database, for an
   * older token) cannot answer, or not within STANDING_WAIT_MS, the link redirects: legitimate mail keeps working
   * through an outage, and a suspended sender's links are refused again once the answer comes back.
   */
  private async refusal(emailId: string, projectId: string | undefined, url: string): Promise<LinkRefusal | undefined> {
    const destination = webDestination(url);
    if (!destination) return 'unsafe_url';
    if (this.guard.blocked.blocks(destination.hostname)) return 'blocked_domain';
    // Fail-open, and no log line per click (README "Failure behaviour": one line per dependency state change).
    const state = await answerWithin(this.standingOf(emailId, projectId), this.guard.waitMs ?? STANDING_WAIT_MS);
    if (state?.deleted) return 'project_deleted';
    if (state?.active) return 'project_suspended';
    return undefined;
  }

  /** The standing of the token's project (an older token's: its email's), undefined when the project is unknown. */
  private async standingOf(emailId: string, projectId: string | undefined) {
    const project = projectId ?? (isUuid(emailId) ? await this.emails.projectOf(emailId) : null);
    return project ? this.guard.standing.state(project) : undefined;
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
