import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { JsonObject } from '@bufbuild/protobuf';
import { on, onBatch, readBatchItem, type OutboxMessage, type TopicRoute } from '@svc/lib/bus-topic';
import type { Queryable } from '@svc/lib/db';
import type { WipedProjects } from '@svc/lib/project-tombstones';
import { enqueueMany, outboxMessageId } from '@svc/lib/outbox';
import { badRequest } from '@svc/lib/errors';
import { isReservedEventName } from '@svc/lib/event-names';
import { GroupCommit } from '@svc/lib/group-commit';
import { isUuid, uuidv7 } from '@svc/lib/ids';
import { type EventTracked, EventTrackedSchema } from '@svc/proto/svc/contacts/v1/events_pb';
import type { EmailLifecycle } from '@svc/proto/svc/messaging/v1/events_pb';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { emailLifecycleSubject, emailLifecycleTopic, MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import type { ActivityRow, ActivityStore } from '../store/activity-store.js';
import type { EmailCountsRow, EmailsStore } from '../store/emails-store.js';
import { intParam } from '@svc/lib/pagination';
import { LIFECYCLE_TYPES, MESSAGING_SERVICE, type EmailsSentPayload, type LifecyclePayload } from './email-events.js';

const dateOf = (t: Timestamp | undefined) => (t ? timestampDate(t) : new Date());
const SENT_SUBJECT = emailLifecycleSubject('sent');
const EMAILS_SENT_SUBJECT = MESSAGING_TOPICS.emailsSent.subject;
const uuidOrNull = (v: string) => (isUuid(v) ? v : null);

/** The fields of an email lifecycle message a feed row is made of. */
interface LifecycleFields {
  projectId: string;
  contactId: string;
  emailId: string;
  type: string;
  data: JsonObject;
  occurredAt: Date;
}

function lifecycleRow(sourceId: string, m: LifecycleFields): ActivityRow | null {
  if (!isUuid(m.projectId) || !m.type) return null;
  return {
    id: uuidv7(),
    source_id: sourceId,
    project_id: m.projectId,
    type: `email.${m.type}`,
    contact_id: uuidOrNull(m.contactId),
    email_id: uuidOrNull(m.emailId),
    email: typeof m.data.email === 'string' ? m.data.email : null,
    name: null,
    data: m.data,
    occurred_at: m.occurredAt,
  };
}

/** Email lifecycle (`emails.*`) -> an `email.<type>` feed row; `sourceId` is the bus message id. */
export function lifecycleActivity(sourceId: string, m: EmailLifecycle): ActivityRow | null {
  return lifecycleRow(sourceId, { ...m, data: m.data ?? {}, occurredAt: dateOf(m.occurredAt) });
}

/** The fields of a tracked event a feed row is made of. */
interface TrackedFields {
  projectId: string;
  contactId: string;
  eventId: string;
  name: string;
  data: JsonObject;
  occurredAt: Date;
}

function trackedRow(sourceId: string, m: TrackedFields): ActivityRow | null {
  if (!isUuid(m.projectId) || !m.name || m.name.startsWith('email.')) return null;
  // Only the platform's own names (which clients cannot track) are types of their own: a client's
  // `contact.deleted` or `segment.vip` is an `event` like any other name.
  const system = isReservedEventName(m.name);
  return {
    id: uuidv7(),
    source_id: sourceId,
    project_id: m.projectId,
    type: system ? m.name : 'event',
    contact_id: uuidOrNull(m.contactId),
    email_id: null,
    email: null,
    name: m.name,
    data: m.eventId ? { ...m.data, eventId: m.eventId } : m.data,
    occurred_at: m.occurredAt,
  };
}

/**
 * A tracked event (`events.tracked`) -> a feed row, or none for `email.*` names: contacts records
 * those from the same lifecycle messages, which are already in the feed (and publishes them on
 * `events.email` now; older ones came on `events.tracked`).
 */
export function trackedActivity(sourceId: string, m: EventTracked): ActivityRow | null {
  return trackedRow(sourceId, { ...m, data: m.data ?? {}, occurredAt: dateOf(m.createdAt) });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const optionalString = (v: unknown): v is string | undefined => v === undefined || typeof v === 'string';

/**
 * trackedActivity of a payload as received, read as it is rather than decoded into an EventTracked (every tracked
 * event comes through here): `undefined` when it is not in the form contacts writes (eventTrackedJson), to decode.
 */
export function trackedPayloadActivity(sourceId: string, payload: unknown): ActivityRow | null | undefined {
  if (!isObject(payload)) return undefined;
  const { projectId, contactId, eventId, name, data, createdAt } = payload;
  if (typeof projectId !== 'string' || typeof name !== 'string') return undefined;
  if (!optionalString(contactId) || !optionalString(eventId) || !optionalString(createdAt)) return undefined;
  if (data !== undefined && !isObject(data)) return undefined;
  const occurredAt = createdAt === undefined ? new Date() : new Date(createdAt);
  if (Number.isNaN(occurredAt.getTime())) return undefined;
  return trackedRow(sourceId, {
    projectId,
    contactId: contactId ?? '',
    eventId: eventId ?? '',
    name,
    data: (data ?? {}) as JsonObject,
    occurredAt,
  });
}

/**
 * An event of an `events.tracked_batch` -> its feed row as its own `events.tracked` would make it (read as received,
 * else decoded), `sourceId` the batch's bus id and the event's place in it; null for an event that does not read or
 * is of another project than its batch's (skipped alone).
 */
export function trackedItemActivity(projectId: string, sourceId: string, item: unknown): ActivityRow | null {
  let row = trackedPayloadActivity(sourceId, item);
  if (row === undefined) {
    const decoded = readBatchItem(EventTrackedSchema, item);
    row = decoded ? trackedActivity(sourceId, decoded) : null;
  }
  return row?.project_id === projectId ? row : null;
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

/** Feed messages handled at once by the consumer (FEED_SUBSCRIPTION) and written in one statement at most. */
const FEED_CONCURRENCY = 256;

/**
 * The lifecycle steps the feed reads from the bus: all but `sent`, whose row the delivery worker writes with the
 * outcome (sentActivity), so a campaign's every email is not delivered back to this service to be recorded.
 */
export const FEED_LIFECYCLE_TYPES = LIFECYCLE_TYPES.filter((t) => t !== 'sent');

/**
 * How the feed's consumer subscribes: the rows are independent (source_id dedupes), so order does not matter.
 * It read `emails.>` until the `sent` rows moved to the delivery worker: that durable is replaced on the broker.
 */
export const FEED_SUBSCRIPTION = { concurrency: FEED_CONCURRENCY, replaces: [MESSAGING_TOPICS.emailLifecycle.subject] };

/**
 * The feed row of an `emails.sent` message, written in the transaction that enqueues it: the row the feed's
 * consumer made from it when it came back from the bus (same source id, the bus message id of its outbox row).
 */
export function sentActivity(message: OutboxMessage, outboxId: string): ActivityRow | null {
  // The payload lifecycleMessage wrote, read as it is rather than decoded back into an EmailLifecycle.
  const { projectId, contactId, emailId, type, data, occurredAt } = message.payload as LifecyclePayload;
  return lifecycleRow(outboxMessageId(MESSAGING_SERVICE, outboxId), {
    projectId,
    contactId,
    emailId,
    type,
    data,
    occurredAt: new Date(occurredAt),
  });
}

/**
 * Enqueues messages in one statement in `tx`; the `emails.sent` ones get their feed row (sentActivity) in it too,
 * but for a project `wiped` drops (mail a delivery batch held while its project was deleted; project-tombstones.ts).
 */
export async function enqueueLifecycle(
  tx: Queryable,
  store: ActivityStore,
  messages: OutboxMessage[],
  wiped: Pick<WipedProjects, 'drops'> = { drops: () => false },
): Promise<void> {
  const outboxIds = await enqueueMany(tx, messages);
  const rows: ActivityRow[] = [];
  messages.forEach((m, i) => {
    if (m.subject === SENT_SUBJECT) {
      const row = sentActivity(m, outboxIds[i]);
      if (row) rows.push(row);
    } else if (m.subject === EMAILS_SENT_SUBJECT) {
      for (const row of emailsSentActivity(m, outboxIds[i])) rows.push(row);
    }
  });
  await store.insertMany(
    tx,
    rows.filter((r) => !wiped.drops(r.project_id, r.occurred_at)),
  );
}

/**
 * The feed rows of a `deliveries.emails_sent` message, one per email, written in the transaction that enqueues it;
 * each row's source id is the message's bus id and the email's place in it.
 */
export function emailsSentActivity(message: OutboxMessage, outboxId: string): ActivityRow[] {
  const source = outboxMessageId(MESSAGING_SERVICE, outboxId);
  const rows: ActivityRow[] = [];
  (message.payload as EmailsSentPayload).emails.forEach((e, i) => {
    const row = lifecycleRow(`${source}/${i}`, { ...e, occurredAt: new Date(e.occurredAt) });
    if (row) rows.push(row);
  });
  return rows;
}

/** GET /activity and friends, over the read model. */
export class ActivityFeed {
  /** Rows of messages handled at once share one INSERT (a campaign sends thousands of messages a second). */
  private readonly writes: GroupCommit<ActivityRow[], void>;

  constructor(
    private readonly store: ActivityStore,
    private readonly emails: EmailsStore,
    /** Wiped projects (lib/project-tombstones.ts): their rows from before the wipe are dropped at write time. */
    wiped: Pick<WipedProjects, 'drops'> = { drops: () => false },
  ) {
    const live = (rows: ActivityRow[]) => rows.filter((r) => !wiped.drops(r.project_id, r.occurred_at));
    this.writes = new GroupCommit(
      () => store.pool.connect(),
      (tx, rows) => store.insertMany(tx, live(rows)),
      {
        maxBatch: FEED_CONCURRENCY,
        writeMany: async (tx, messages) => {
          await store.insertMany(tx, live(messages.flat()));
          return messages.map(() => undefined);
        },
        // One INSERT: its own transaction, without BEGIN and COMMIT (one write per tracked event and lifecycle step).
        oneStatement: () => true,
      },
    );
  }

  /** The bus messages the feed is built from (subscribe with FEED_SUBSCRIPTION). */
  routes(): TopicRoute[] {
    return [
      ...FEED_LIFECYCLE_TYPES.map((type) =>
        on(emailLifecycleTopic(type), (m, { id }) => this.record(lifecycleActivity(id, m))),
      ),
      this.trackedRoute(),
      this.trackedBatchRoute(),
    ];
  }

  /** Tracked events are read from the payload as received; one in another form is decoded (or found malformed). */
  private trackedRoute(): TopicRoute {
    const decoded = on(CONTACTS_TOPICS.eventTracked, (m, { id }) => this.record(trackedActivity(id, m)));
    return {
      subject: decoded.subject,
      deliver: (m) => {
        const row = trackedPayloadActivity(m.id, m.data);
        return row === undefined ? decoded.deliver(m) : this.record(row);
      },
    };
  }

  /** A batch of tracks' events: one row each, written together (one group-commit item for the message). */
  private trackedBatchRoute(): TopicRoute {
    return onBatch(CONTACTS_TOPICS.eventsTrackedBatch, 'events', async (batch, { id }) => {
      const rows: ActivityRow[] = [];
      batch.items.forEach((item, i) => {
        const row = trackedItemActivity(batch.projectId, `${id}/${i}`, item);
        if (row) rows.push(row);
      });
      if (rows.length) await this.writes.submit(rows);
    });
  }

  private async record(row: ActivityRow | null): Promise<void> {
    if (row) await this.writes.submit([row]);
  }

  /** SPEC.md cursor pagination: `total` only on the first page. */
  async list(projectId: string, q: ActivityListQuery) {
    const limit = Math.max(1, intParam(q.limit, 'limit', { min: 0, def: 20, max: 100 }));
    const types = q.type
      ? q.type
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean)
      : undefined;
    if (q.contactId && !isUuid(q.contactId)) return { items: [], cursor: '', hasMore: false, total: 0 };
    const filter = { types, contactId: q.contactId || undefined };
    const { rows, total } = await this.store.page(projectId, {
      ...filter,
      after: q.cursor ? decodeCursor(q.cursor) : undefined,
      limit: limit + 1,
      withTotal: !q.cursor,
    });
    const hasMore = rows.length > limit;
    const items = rows.slice(0, limit);
    return { items, cursor: hasMore ? encodeCursor(items[items.length - 1]) : '', hasMore, total };
  }

  async stats(
    projectId: string,
    daysParam?: string,
  ): Promise<{ days: number; total: number; byType: { type: string; count: number }[]; emails: EmailCountsRow }> {
    const days = intParam(daysParam, 'days', { min: 1, def: 30, max: 365 });
    const since = new Date(Date.now() - days * 86400_000);
    const [byType, emails] = await Promise.all([
      this.store.countsByType(projectId, since),
      this.emails.counts(projectId, since),
    ]);
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
    return queued.map((e) => ({
      kind: 'email',
      id: e.id,
      name: `${e.subject} -> ${e.to_email}`,
      dueAt: e.next_attempt_at,
    }));
  }
}
