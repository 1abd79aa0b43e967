import { billingLimitReached } from '@svc/lib/billing-caps';
import { AppError, badRequest, notFound, unverifiedDomain, validationError } from '@svc/lib/errors';
import { withTransaction } from '@svc/lib/db';
import { isUuid, uuidv7 } from '@svc/lib/ids';
import type { CampaignContent, CampaignRow, CampaignStatus } from '../store/campaign-row.js';
import type { CampaignsStore } from '../store/campaigns-store.js';
import type { RecipientsStore } from '../store/recipients-store.js';
import { audienceTree, references, referencesField, subscribedOnly } from './audience.js';
import { validateCreate, validateReplace, validateTestEmail, type CampaignInput } from './campaign-input.js';
import { campaignStats, type CampaignStatsView } from './stats.js';
import { allowed, notAllowed } from './states.js';
import type {
  ContactsPort,
  EmailCapPort,
  EmailContent,
  MessagingPort,
  SegmentsPort,
  TemplateCheckPort,
} from './ports.js';
import { intParam, namedSortColumn, offsetPage, totalPages } from '@svc/lib/pagination';

export const STATUSES: readonly CampaignStatus[] = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'];
/** GET /analytics/top-campaigns metrics and the counter each orders by. */
export const TOP_METRICS: Record<string, string> = {
  opened: 'opened_count',
  clicked: 'clicked_count',
  sent: 'sent_count',
  delivered: 'delivered_count',
  bounced: 'bounced_count',
};
/** A test message to an address that is no contact of the project is sent for this (nil) contact id. */
export const NO_CONTACT = '00000000-0000-0000-0000-000000000000';

export interface ListQuery {
  page?: string;
  pageSize?: string;
  status?: string;
  search?: string;
  sort?: string;
  dir?: string;
}

/** The contacts service names a bad tree's fields `condition...`; the client sent `audienceCondition`. */
function asAudienceError(err: unknown): unknown {
  if (!(err instanceof AppError) || !err.errors?.length) return err;
  const errors = err.errors.map((e) => ({
    ...e,
    field:
      e.field === 'condition' || e.field.startsWith('condition.')
        ? `audience${e.field[0].toUpperCase()}${e.field.slice(1)}`
        : e.field,
  }));
  return new AppError({ ...err.toJSON(), errors });
}

export const emailContent = (c: CampaignRow): EmailContent => ({
  subject: c.subject,
  body: c.body,
  from: c.from_email,
  fromName: c.from_name,
  replyTo: c.reply_to,
  type: c.type,
});

/** Sends that keep meeting a concurrent PUT give up with a 409 after this many checks. */
const SEND_ATTEMPTS = 5;

const contentOf = (c: CampaignRow): CampaignContent => ({
  name: c.name,
  description: c.description,
  subject: c.subject,
  body: c.body,
  from_email: c.from_email,
  from_name: c.from_name,
  reply_to: c.reply_to,
  type: c.type,
  audience_type: c.audience_type,
  segment_id: c.segment_id,
  audience_condition: c.audience_condition,
});

/** Campaigns of a project: SPEC.md's rules and the state table (states.ts); the fan-out is fan-out.ts. */
export class Campaigns {
  constructor(
    private readonly store: CampaignsStore,
    private readonly recipients: RecipientsStore,
    private readonly contacts: ContactsPort,
    private readonly segments: SegmentsPort,
    private readonly messaging: MessagingPort & EmailCapPort & TemplateCheckPort,
  ) {}

  async list(projectId: string, q: ListQuery) {
    const { page, pageSize, offset } = offsetPage(q.page, q.pageSize);
    let status: CampaignStatus | undefined;
    if (q.status) {
      status = STATUSES.find((s) => s === q.status!.toUpperCase());
      if (!status)
        throw badRequest(`status must be one of ${STATUSES.join(', ')}`, { parameter: 'status', received: q.status });
    }
    const { rows, total } = await this.store.page(projectId, {
      status,
      search: q.search?.trim() || undefined,
      sort: namedSortColumn(q.sort),
      dir: q.dir?.toLowerCase() === 'asc' ? 'asc' : 'desc',
      limit: pageSize,
      offset,
    });
    return { rows, total, page, pageSize, totalPages: totalPages(total, pageSize) };
  }

  async get(projectId: string, id: string): Promise<CampaignRow> {
    const row = isUuid(id) ? await this.store.get(this.store.pool, projectId, id) : null;
    if (!row) throw notFound('Campaign', id, 'CAMPAIGN_NOT_FOUND');
    return row;
  }

  /**
   * Validation (422), the subject and body as Liquid (422 naming each that does not parse), then the audience
   * (422 naming segmentId or audienceCondition), then the sender (403).
   */
  async create(projectId: string, input: CampaignInput): Promise<CampaignRow> {
    const content = validateCreate(input);
    await this.messaging.checkTemplates(projectId, content.subject, content.body);
    await this.checkAudience(projectId, content);
    await this.checkSender(projectId, content.from_email);
    return this.store.insert(uuidv7(), projectId, content);
  }

  async replace(projectId: string, id: string, input: CampaignInput): Promise<CampaignRow> {
    const current = await this.get(projectId, id);
    if (!allowed('update', current.status)) throw notAllowed('update', current.status);
    const content = validateReplace(input, contentOf(current));
    if (content.subject !== current.subject || content.body !== current.body)
      await this.messaging.checkTemplates(projectId, content.subject, content.body);
    const audienceChanged =
      content.audience_type !== current.audience_type ||
      content.segment_id !== current.segment_id ||
      JSON.stringify(content.audience_condition) !== JSON.stringify(current.audience_condition);
    if (audienceChanged) await this.checkAudience(projectId, content);
    if (content.from_email.toLowerCase() !== current.from_email.toLowerCase())
      await this.checkSender(projectId, content.from_email);
    const row = await this.store.replaceDraft(projectId, id, content);
    if (!row) throw notAllowed('update', (await this.get(projectId, id)).status);
    return row;
  }

  async remove(projectId: string, id: string): Promise<void> {
    const current = await this.get(projectId, id);
    if (!allowed('delete', current.status)) throw notAllowed('delete', current.status);
    if (!(await this.store.removeUnlessSending(projectId, id))) {
      throw notAllowed('delete', (await this.get(projectId, id)).status);
    }
  }

  /** A new DRAFT with the same content and audience, nothing of the original's sending. */
  async duplicate(projectId: string, id: string): Promise<CampaignRow> {
    const c = await this.get(projectId, id);
    const name = `${c.name} (copy)`.slice(0, 200);
    return this.store.insert(uuidv7(), projectId, { ...contentOf(c), name });
  }

  /**
   * DRAFT -> SCHEDULED (a parseable `scheduledFor` in the future) or DRAFT -> SENDING (none, or a
   * time already past). The sender and the audience are checked again: either may have changed
   * since the draft was written.
   */
  async send(projectId: string, id: string, scheduledFor?: string): Promise<{ row: CampaignRow; message: string }> {
    // A PUT that commits while the checks run makes the move miss; the new content is then checked in turn.
    for (let attempt = 1; ; attempt++) {
      const sent = await this.sendChecked(projectId, id, scheduledFor);
      if (sent) return sent;
      const now = await this.get(projectId, id);
      if (!allowed('send', now.status) || attempt === SEND_ATTEMPTS) throw notAllowed('send', now.status);
    }
  }

  /** One attempt of `send`: null when the draft's content changed after it was checked. */
  private async sendChecked(
    projectId: string,
    id: string,
    scheduledFor?: string,
  ): Promise<{ row: CampaignRow; message: string } | null> {
    const current = await this.get(projectId, id);
    if (!allowed('send', current.status)) throw notAllowed('send', current.status);
    let at: Date | undefined;
    if (scheduledFor !== undefined && scheduledFor.trim() !== '') {
      at = new Date(scheduledFor);
      if (Number.isNaN(at.getTime()))
        throw badRequest('scheduledFor is not a parseable date', { field: 'scheduledFor', received: scheduledFor });
    }
    // A draft saved before content was checked is refused here rather than failing every recipient.
    await this.messaging.checkTemplates(projectId, current.subject, current.body);
    await this.checkAudience(projectId, contentOf(current));
    // A suspended project's campaign does not start (messaging answers 403 PROJECT_SUSPENDED).
    await this.checkSender(projectId, current.from_email, true);
    const checked = contentOf(current);
    await this.checkEmailCap(projectId, checked);
    const later = at && at.getTime() > Date.now();
    // The move and a last look at the segments the audience names, in one transaction: a segment DELETE under way
    // refuses the send at once (409; the move is undone), and one that starts later waits for the move to commit
    // (ListCampaignsUsing) and is refused in turn. The campaign never starts on a segment that is going.
    const row = await withTransaction(this.store.pool, async (tx) => {
      const moved = later
        ? await this.store.schedule(tx, projectId, id, at!, checked)
        : await this.store.sendNow(tx, projectId, id, checked);
      if (moved) await this.checkSegments(projectId, checked, (s) => this.segments.existsUnlessDeleting(projectId, s));
      return moved;
    });
    if (!row) return null;
    if (!later) await this.store.notifyDue();
    const message = later ? `Campaign scheduled for ${at!.toISOString()}` : 'Campaign is being sent';
    return { row, message };
  }

  /** SCHEDULED -> DRAFT (scheduledFor cleared) or SENDING -> CANCELLED. */
  async cancel(projectId: string, id: string): Promise<{ row: CampaignRow; message: string }> {
    const current = await this.get(projectId, id);
    if (!allowed('cancel', current.status)) throw notAllowed('cancel', current.status);
    const row = await this.store.cancel(projectId, id);
    if (!row) throw notAllowed('cancel', (await this.get(projectId, id)).status);
    const message =
      row.status === 'DRAFT'
        ? 'Scheduled send cancelled; the campaign is a draft again'
        : 'Campaign cancelled; recipients not yet handed over get nothing';
    return { row, message };
  }

  /**
   * One real message to `email`, marked as a test (no statistics count it), personalised with the
   * contact's data when the address is a contact of the project. It is sent at transactional
   * priority and whatever the contact's subscription: someone asked for it.
   */
  async sendTest(projectId: string, id: string, email: string) {
    const c = await this.get(projectId, id);
    const address = validateTestEmail(email);
    await this.checkSender(projectId, c.from_email);
    const contact = await this.contacts.lookup(projectId, address);
    const [r] = await this.messaging.queue(
      projectId,
      emailContent(c),
      [
        {
          contactId: contact?.id ?? NO_CONTACT,
          email: contact?.email ?? address,
          subscribed: true,
          variables: contact?.data ?? {},
        },
      ],
      { campaignId: c.id, test: true },
    );
    return { email: contact?.email ?? address, emailId: r.emailId, status: r.status, error: r.error };
  }

  async stats(projectId: string, id: string): Promise<CampaignStatsView> {
    const c = await this.get(projectId, id);
    const counts = await this.recipients.counts([c.id]);
    return campaignStats(c, counts.get(c.id));
  }

  /** Campaigns whose audience uses a segment (SEGMENT audience or a segment.<id> filter), a field or an event. */
  async using(
    projectId: string,
    q: { segmentId?: string; field?: string; eventName?: string; activeOnly: boolean },
  ): Promise<CampaignRow[]> {
    const rows = await this.store.withAudience(projectId, q.activeOnly);
    return rows.filter((c) => {
      const refs = references(c.audience_condition);
      if (q.segmentId) {
        const id = q.segmentId.toLowerCase();
        return c.segment_id === id || refs.segments.has(id);
      }
      if (q.field) return referencesField(refs, q.field);
      if (q.eventName) return refs.events.has(q.eventName);
      return false;
    });
  }

  upcoming(projectId: string, limit: number): Promise<CampaignRow[]> {
    return this.store.upcoming(projectId, Math.min(Math.max(limit || 20, 1), 100));
  }

  async top(projectId: string, metric: string | undefined, limit: string | undefined) {
    const name = (metric || 'opened').toLowerCase();
    const column = TOP_METRICS[name];
    if (!column) {
      const known = Object.keys(TOP_METRICS).join(', ');
      throw badRequest(`metric must be one of ${known}`, { parameter: 'metric', received: metric });
    }
    const n = intParam(limit, 'limit', { min: 1, def: 10, max: 100 });
    const rows = await this.store.top(projectId, column, n);
    return { metric: name, campaigns: await this.withStats(rows) };
  }

  async statsPage(projectId: string, page?: string, pageSize?: string) {
    const p = offsetPage(page, pageSize);
    const { rows, total } = await this.store.sentPage(projectId, p.pageSize, p.offset);
    return {
      campaigns: await this.withStats(rows),
      total,
      page: p.page,
      pageSize: p.pageSize,
      totalPages: totalPages(total, p.pageSize),
    };
  }

  private async withStats(rows: CampaignRow[]): Promise<CampaignStatsView[]> {
    const counts = await this.recipients.counts(rows.map((r) => r.id));
    return rows.map((r) => campaignStats(r, counts.get(r.id)));
  }

  /**
   * SEGMENT: the project's own segment (422 otherwise); FILTERED: a tree the contacts service accepts, naming only
   * segments of the project.
   */
  private async checkAudience(projectId: string, c: CampaignContent): Promise<void> {
    if (c.audience_type === 'FILTERED')
      await this.contacts.count(projectId, audienceTree(c)).catch((err) => Promise.reject(asAudienceError(err)));
    await this.checkSegments(projectId, c, (id) => this.segments.exists(projectId, id));
  }

  /**
   * The segments the audience names are the project's (422 naming each that is not): a SEGMENT audience's, and those
   * a FILTERED tree names (a deleted one would read as no members, and notMemberOfSegment as everyone).
   */
  private async checkSegments(
    projectId: string,
    c: CampaignContent,
    exists: (segmentId: string) => Promise<boolean>,
  ): Promise<void> {
    if (c.audience_type === 'SEGMENT' && c.segment_id && !(await exists(c.segment_id))) {
      throw validationError([
        { field: 'segmentId', message: 'Segment not found in this project', code: 'not_found', received: c.segment_id },
      ]);
    }
    if (c.audience_type !== 'FILTERED') return;
    const named = [...references(c.audience_condition).segments].filter(isUuid);
    const found = await Promise.all(named.map((id) => exists(id)));
    const missing = named.filter((_, i) => !found[i]);
    if (missing.length) {
      throw validationError(
        missing.map((id) => ({
          field: 'audienceCondition',
          message: `Segment ${id} not found in this project`,
          code: 'not_found',
          received: id,
        })),
      );
    }
  }

  /**
   * A campaign that would cross the email cap is refused before it starts (402): its audience as counted now
   * (subscribed contacts unless TRANSACTIONAL) must fit in what is left of the month's emails.
   */
  private async checkEmailCap(projectId: string, c: CampaignContent): Promise<void> {
    // Uncapped projects (most) cost one call and no audience count.
    const cap = await this.messaging.emailAllowance(projectId, 0);
    if (cap.limit === undefined) return;
    const tree = audienceTree(c);
    const subscribed = { field: 'subscribed', operator: 'equals', value: true };
    const audience = subscribedOnly(c.type)
      ? { logic: 'AND', groups: [{ filters: [subscribed], ...(tree ? { conditions: tree } : {}) }] }
      : tree;
    const recipients = await this.contacts.count(projectId, audience);
    const a = recipients > 0 ? await this.messaging.emailAllowance(projectId, recipients) : cap;
    if (!a.allowed && a.limit !== undefined) throw billingLimitReached('emails', a.used, a.limit, recipients);
  }

  private async checkSender(projectId: string, from: string, forSending = false): Promise<void> {
    if (!(await this.messaging.senderVerified(projectId, from, forSending))) throw unverifiedDomain(from);
  }
}
