import type { BusMessage } from '@svc/lib/bus';
import { badRequest } from '@svc/lib/errors';
import { isUuid, uuidv7 } from '@svc/lib/ids';
import type { ActivityRow, ActivityStore } from '../store/activity-store.js';
import type { EmailCountsRow, EmailsStore } from '../store/emails-store.js';
import type { LifecyclePayload } from './email-events.js';
import { intParam } from './pagination.js';

/** The bus subjects the feed is built from. */
export const ACTIVITY_SUBJECTS = ['emails.>', 'events.tracked'];

interface TrackedEventPayload {
  projectId: string;
  contactId: string;
  eventId?: string;
  name: string;
  data?: Record<string, unknown>;
  createdAt?: string;
}

const asDate = (v: unknown) => {
  const d = typeof v === 'string' ? new Date(v) : new Date(NaN);
  return Number.isNaN(d.getTime()) ? new Date() : d;
};

/**
 * One bus message -> one feed row (or none). Email lifecycle comes from `emails.*`; tracked
 * events from `events.tracked`, where `email.*` names are skipped (contacts records those from
 * the same lifecycle messages, which are already in the feed).
 */
export function toActivity(message: BusMessage): ActivityRow | null {
  const base = { id: uuidv7(), source_id: message.id };
  if (message.subject.startsWith('emails.')) {
    const p = message.data as LifecyclePayload;
    if (!p?.projectId || !p.type) return null;
    return {
      ...base,
      project_id: p.projectId,
      type: `email.${p.type}`,
      contact_id: isUuid(p.contactId) ? p.contactId : null,
      email_id: isUuid(p.emailId) ? p.emailId : null,
      email: typeof p.data?.email === 'string' ? p.data.email : null,
      name: null,
      data: p.data ?? {},
      occurred_at: asDate(p.occurredAt),
    };
  }
  if (message.subject === 'events.tracked') {
    const p = message.data as TrackedEventPayload;
    if (!p?.projectId || typeof p.name !== 'string' || p.name.startsWith('email.')) return null;
    const system = p.name.startsWith('contact.') || p.name.startsWith('segment.');
    return {
      ...base,
      project_id: p.projectId,
      type: system ? p.name : 'event',
      contact_id: isUuid(p.contactId) ? p.contactId : null,
      email_id: null,
      email: null,
      name: p.name,
      data: { ...(p.data ?? {}), ...(p.eventId ? { eventId: p.eventId } : {}) },
      occurred_at: asDate(p.createdAt),
    };
  }
  return null;
}

function encodeCursor(row: ActivityRow): string {
  return Buffer.from(JSON.stringify([row.occurred_at.toISOString(), row.id])).toString('base64url');
}

function decodeCursor(cursor: string): { occurredAt: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const occurredAt = new Date(at);
    // Years outside 1..9999 parse in JavaScript but are out of PostgreSQL's range: a forged cursor.
    const year = occurredAt.getUTCFullYear();
    if (isUuid(id) && !Number.isNaN(occurredAt.getTime()) && year >= 1 && year <= 9999) return { occurredAt, id };
  } catch {
    /* falls through */
  }
  throw badRequest('Invalid cursor', { parameter: 'cursor' });
}

export interface ActivityListQuery {
  limit?: string;
  cursor?: string;
  type?: string;
  contactId?: string;
}

/** GET /activity and friends, over the read model. */
export class ActivityFeed {
  constructor(private readonly store: ActivityStore, private readonly emails: EmailsStore) {}

  async record(message: BusMessage): Promise<void> {
    const row = toActivity(message);
    if (row) await this.store.insert(row);
  }

  /** SPEC.md cursor pagination: `total` only on the first page. */
  async list(projectId: string, q: ActivityListQuery) {
    const limit = Math.max(1, intParam(q.limit, 'limit', { min: 0, def: 20, max: 100 }));
    const types = q.type ? q.type.split(',').map((t) => t.trim()).filter(Boolean) : undefined;
    if (q.contactId && !isUuid(q.contactId)) return { items: [], cursor: '', hasMore: false, total: 0 };
    const filter = { types, contactId: q.contactId || undefined };
    const rows = await this.store.page(projectId, { ...filter, after: q.cursor ? decodeCursor(q.cursor) : undefined, limit: limit + 1 });
    const hasMore = rows.length > limit;
    const items = rows.slice(0, limit);
    const total = q.cursor ? 0 : await this.store.count(projectId, filter);
    return { items, cursor: hasMore ? encodeCursor(items[items.length - 1]) : '', hasMore, total };
  }

  async stats(projectId: string, daysParam?: string): Promise<{ days: number; total: number; byType: { type: string; count: number }[]; emails: EmailCountsRow }> {
    const days = intParam(daysParam, 'days', { min: 1, def: 30, max: 365 });
    const since = new Date(Date.now() - days * 86400_000);
    const [byType, emails] = await Promise.all([this.store.countsByType(projectId, since), this.emails.counts(projectId, since)]);
    return { days, total: byType.reduce((n, t) => n + t.count, 0), byType, emails };
  }

  async recentCount(projectId: string, minutesParam?: string): Promise<{ count: number; since: Date }> {
    const minutes = intParam(minutesParam, 'minutes', { min: 1, def: 5, max: 1440 });
    const since = new Date(Date.now() - minutes * 60_000);
    return { count: await this.store.count(projectId, { since }), since };
  }

  types(projectId: string): Promise<string[]> {
    return this.store.types(projectId);
  }

  /** Upcoming sends this service knows of: queued messages waiting for a retry or the throttle. */
  async upcoming(projectId: string) {
    const queued = await this.emails.queuedRetries(projectId, 50);
    return queued.map((e) => ({ kind: 'email', id: e.id, name: `${e.subject} -> ${e.to_email}`, dueAt: e.next_attempt_at }));
  }
}
