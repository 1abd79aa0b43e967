import { badRequest, notFound, validationError } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { EmailAttemptRow, EmailListFilter, EmailsStore, EmailSummaryRow } from '../store/emails-store.js';
import { suppressionReason, type SuppressionReason } from './email-batch.js';
import { parseInstant } from './email-timeseries.js';
import { intParam } from '@svc/lib/pagination';

const STATUSES = ['queued', 'sending', 'sent', 'delivered', 'bounced', 'complained', 'suppressed', 'failed'];

/** A step of a message's life, oldest first in GET /emails/{id}. */
export interface TimelineEntry {
  type:
    | 'queued'
    | 'suppressed'
    | 'deferred'
    | 'sent'
    | 'delivered'
    | 'opened'
    | 'clicked'
    | 'bounced'
    | 'complained'
    | 'failed';
  at: Date;
  detail: string;
}

export interface EmailDetail {
  email: EmailSummaryRow;
  reason: SuppressionReason | null;
  attempts: EmailAttemptRow[];
  timeline: TimelineEntry[];
}

/**
 * Why a suppressed email was withheld, from its bounce_reason: the code written since `reason` exists, or the
 * text written before it (suppressed: earlier bounce or complaint / contact is unsubscribed).
 */
export function reasonOf(e: Pick<EmailSummaryRow, 'status' | 'bounce_reason'>): SuppressionReason | null {
  if (e.status !== 'suppressed') return null;
  const stored = e.bounce_reason ?? '';
  if (stored === 'unsubscribed' || stored === 'contact is unsubscribed') return 'unsubscribed';
  if (stored === 'complained') return 'complained';
  return suppressionReason(stored === 'bounced' ? 'bounce' : stored);
}

/**
 * The lifecycle in time order: queued (or suppressed) at creation, each attempt (a deferral, the send, a bounce,
 * giving up), then delivery, first open and click and a complaint, from the row's own times.
 */
export function timelineOf(e: EmailSummaryRow, attempts: EmailAttemptRow[]): TimelineEntry[] {
  const reason = reasonOf(e);
  const out: TimelineEntry[] = [
    reason
      ? { type: 'suppressed', at: e.created_at, detail: reason }
      : { type: 'queued', at: e.created_at, detail: '' },
  ];
  const STEP = { retry: 'deferred', sent: 'sent', bounced: 'bounced', failed: 'failed' } as const;
  for (const a of attempts) out.push({ type: STEP[a.outcome], at: a.at, detail: a.smtp_response });
  // Rows sent before attempts were recorded (or bounced by a provider webhook) still show the step.
  const has = (type: TimelineEntry['type']) => out.some((t) => t.type === type);
  if (e.sent_at && !has('sent')) out.push({ type: 'sent', at: e.sent_at, detail: '' });
  if (e.delivered_at) out.push({ type: 'delivered', at: e.delivered_at, detail: '' });
  if (e.first_opened_at) out.push({ type: 'opened', at: e.first_opened_at, detail: `${e.open_count} open(s)` });
  if (e.first_clicked_at) out.push({ type: 'clicked', at: e.first_clicked_at, detail: `${e.click_count} click(s)` });
  if (e.bounced_at && !has('bounced')) out.push({ type: 'bounced', at: e.bounced_at, detail: e.bounce_reason ?? '' });
  if (e.complained_at) out.push({ type: 'complained', at: e.complained_at, detail: '' });
  if (e.status === 'failed' && !has('failed'))
    out.push({ type: 'failed', at: e.created_at, detail: e.last_error ?? '' });
  // Stable: equal times keep the order above (queued before sent).
  return out
    .map((t, i) => ({ t, i }))
    .sort((a, b) => a.t.at.getTime() - b.t.at.getTime() || a.i - b.i)
    .map((x) => x.t);
}

export interface EmailListQuery {
  limit?: string;
  cursor?: string;
  status?: string;
  contactId?: string;
  templateId?: string;
  campaignId?: string;
  from?: string;
  to?: string;
}

function encodeCursor(e: EmailSummaryRow): string {
  return Buffer.from(JSON.stringify([e.created_at.toISOString(), e.id])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(at);
    const year = createdAt.getUTCFullYear();
    if (isUuid(id) && !Number.isNaN(createdAt.getTime()) && year >= 1 && year <= 9999) return { createdAt, id };
  } catch {
    /* falls through */
  }
  throw badRequest('Invalid cursor', { parameter: 'cursor' });
}

/** A filter id must be a uuid: anything else is a 422 naming the parameter (never a database error). */
function uuidParam(raw: string | undefined, name: string): string | undefined {
  if (!raw) return undefined;
  if (isUuid(raw)) return raw;
  throw validationError([
    { field: name, message: `${name} must be a uuid`, code: 'invalid_string', received: String(raw).slice(0, 100) },
  ]);
}

export function parseEmailFilter(q: EmailListQuery): EmailListFilter {
  const statuses = q.status
    ? [
        ...new Set(
          q.status
            .split(',')
            .map((s) => s.trim().toLowerCase())
            .filter(Boolean),
        ),
      ]
    : undefined;
  const bad = statuses?.find((s) => !STATUSES.includes(s));
  if (bad !== undefined) {
    throw validationError([
      {
        field: 'status',
        message: `status must be one or more of ${STATUSES.join(', ')} (comma-separated)`,
        code: 'invalid_enum_value',
        received: bad.slice(0, 100),
      },
    ]);
  }
  const from = q.from ? parseInstant(q.from, 'from') : undefined;
  const to = q.to ? parseInstant(q.to, 'to') : undefined;
  if (from && to && from > to) {
    throw badRequest('from must not be after to', { from: from.toISOString(), to: to.toISOString() });
  }
  return {
    ...(statuses?.length ? { statuses } : {}),
    contactId: uuidParam(q.contactId, 'contactId'),
    templateId: uuidParam(q.templateId, 'templateId'),
    campaignId: uuidParam(q.campaignId, 'campaignId'),
    from,
    to,
  };
}

/** GET /emails and GET /emails/{id}: what happened to a project's messages, and why mail did not go. */
export class EmailHistory {
  constructor(private readonly emails: EmailsStore) {}

  async get(projectId: string, id: string): Promise<EmailDetail> {
    const email = isUuid(id) ? await this.emails.get(projectId, id) : null;
    if (!email) throw notFound('Email', id);
    const attempts = await this.emails.attempts(email.id);
    return { email, reason: reasonOf(email), attempts, timeline: timelineOf(email, attempts) };
  }

  /** SPEC.md cursor pagination (`limit` 1..100, default 20; `total` only on the first page), newest first. */
  async list(projectId: string, q: EmailListQuery) {
    const limit = Math.max(1, intParam(q.limit, 'limit', { min: 0, def: 20, max: 100 }));
    const filter = parseEmailFilter(q);
    const after = q.cursor ? decodeCursor(q.cursor) : undefined;
    const rows = await this.emails.page(projectId, { ...filter, after, limit: limit + 1 });
    const hasMore = rows.length > limit;
    const items = rows.slice(0, limit);
    const total = q.cursor ? 0 : await this.emails.count(projectId, filter);
    return {
      items: items.map((email) => ({ email, reason: reasonOf(email) })),
      cursor: hasMore ? encodeCursor(items[items.length - 1]) : '',
      hasMore,
      total,
    };
  }
}
