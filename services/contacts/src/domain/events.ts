import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { EmailLifecycle, EmailsSent } from '@svc/proto/svc/messaging/v1/events_pb';
import type { Queryable } from '@svc/lib/db';
import type { WipedProjects } from '@svc/lib/project-tombstones';
import { validationError } from '@svc/lib/errors';
import { isUuid, uuidv7 } from '@svc/lib/ids';
import { enqueueMessage } from '@svc/lib/outbox';
import { outgoingContext, type RequestContext } from '@svc/lib/request-context';
import type { EventRow } from '../store/contact-rows.js';
import type { ContactBatches } from '../store/contacts-store.js';
import type { EventsStore } from '../store/events-store.js';
import { eventTracked } from './bus-messages.js';
import { checkEmail, type Contacts } from './contacts.js';
import { decodeCursor, keysetPage } from './cursor.js';
import { splitDataPatch } from './custom-data.js';
import { trackedEventData, writeTrackBatch, type Tracked, type TrackWrite } from './track-batch.js';
import { GroupCommit } from '@svc/lib/group-commit';
import { checkTrackableEventName } from './event-names.js';

/** Items of one TrackEvents call. */
export const MAX_TRACK_ITEMS = 1000;

export interface TrackInput {
  projectId: string;
  email: unknown;
  event: unknown;
  subscribed?: boolean;
  data: unknown;
}

/** Email lifecycle messages handled at once by the consumer and written in one transaction at most. */
const EMAIL_ACTIVITY_CONCURRENCY = 256;

/** How contacts subscribes to `emails.*`: each message adds its own rows, so order does not matter. */
export const EMAIL_ACTIVITY_SUBSCRIPTION = { concurrency: EMAIL_ACTIVITY_CONCURRENCY };

/** `deliveries.emails_sent` messages handled at once: each holds a delivery batch's sent emails of one project. */
export const EMAILS_SENT_SUBSCRIPTION = { concurrency: 4 };

/** One bus message's lifecycle steps: one for `emails.<type>`, a delivery batch's for `deliveries.emails_sent`. */
interface EmailActivityWrite {
  messageId: string;
  items: Array<{ m: EmailLifecycle; at: Date }>;
}

/** Tracked events: /v1/track, the dashboard alias, and the email lifecycle recorded from the bus. */
export class Events {
  private readonly commits: GroupCommit<TrackWrite, Tracked>;
  /** Email lifecycle messages from the bus, written in batches. */
  private readonly emailActivity: GroupCommit<EmailActivityWrite, void>;

  constructor(
    private readonly contacts: Contacts,
    private readonly store: EventsStore,
    batches: ContactBatches,
    /** Wiped projects (lib/project-tombstones.ts): their lifecycle messages from before the wipe write nothing. */
    private readonly wiped: Pick<WipedProjects, 'drops'> = { drops: () => false },
  ) {
    this.commits = new GroupCommit(
      () => contacts.pool.connect(),
      (tx, w) => this.write(tx, w),
      {
        lockOrder: (w) => `${w.projectId}:${w.email.toLowerCase()}`,
        writeMany: (tx, writes, contexts) =>
          writeTrackBatch(tx, { batches, contacts }, writes, contexts, { own: true }),
        writeManyEnds: true,
      },
    );
    this.emailActivity = new GroupCommit(
      () => contacts.pool.connect(),
      (tx, w) => this.writeEmailActivity(tx, [w], []),
      {
        maxBatch: EMAIL_ACTIVITY_CONCURRENCY,
        // One statement (EventsStore.writeEmailActivity): its own transaction, without BEGIN and COMMIT.
        oneStatement: () => true,
        writeMany: async (tx, writes, contexts) => {
          await this.writeEmailActivity(tx, writes, contexts);
          return writes.map(() => undefined);
        },
      },
    );
  }

  /**
   * Upserts the contact (new contacts subscribed) and records the event in one transaction.
   * The event keeps the data sent with it: persistent values (also saved on the contact) and
   * the one-off `{value, persistent: false}` values, which only the event carries.
   */
  async track(input: TrackInput): Promise<{ contactId: string; event: EventRow }> {
    const email = checkEmail(input.email);
    const name = checkTrackableEventName(input.event);
    const patch = splitDataPatch(input.data);
    return this.commits.submit({ projectId: input.projectId, email, name, subscribed: input.subscribed, patch });
  }

  /** One track alone: the path a failed batch falls back to. */
  private async write(tx: Queryable, w: TrackWrite): Promise<Tracked> {
    const { contact } = await this.contacts.upsertIn(
      tx,
      {
        projectId: w.projectId,
        email: w.email,
        subscribed: w.subscribed,
        defaultSubscribed: true,
        data: undefined,
        mode: 'track',
      },
      w.patch,
    );
    const event = await this.store.insert(tx, {
      id: uuidv7(),
      projectId: w.projectId,
      contactId: contact.id,
      name: w.name,
      data: trackedEventData(w.patch),
    });
    await enqueueMessage(tx, eventTracked(event));
    return { contactId: contact.id, event };
  }

  async list(q: { projectId: string; limit: number; cursor?: string; name?: string; contactId?: string }) {
    if (q.contactId !== undefined) await this.contacts.get(q.projectId, q.contactId);
    const after = q.cursor ? decodeCursor(q.cursor, 'events', 'desc') : undefined;
    const rows = await this.store.list({ ...q, after: after && { at: after.value, id: after.id } });
    const { page, hasMore, cursor } = keysetPage(rows, q.limit, (last) => ({
      sort: 'events',
      dir: 'desc',
      value: last.at,
      id: last.id,
    }));
    return { events: page, hasMore, cursor };
  }

  stats(projectId: string, days: number) {
    if (!Number.isInteger(days) || days < 1 || days > 3650) {
      throw validationError([
        { field: 'days', message: 'days must be an integer from 1 to 3650', code: 'invalid_type', received: days },
      ]);
    }
    return this.store.stats(projectId, days);
  }

  /** GET /analytics/top-events: `days` 1 to 3650 (default 30), `limit` clamped to 1..100 (default 10). */
  topEvents(projectId: string, days = 30, limit = 10) {
    if (!Number.isInteger(days) || days < 1 || days > 3650) {
      throw validationError([
        { field: 'days', message: 'days must be an integer from 1 to 3650', code: 'invalid_type', received: days },
      ]);
    }
    return this.store.topCustom(projectId, days, Math.min(100, Math.max(1, Math.trunc(limit) || 10)));
  }

  names(projectId: string) {
    return this.store.names(projectId);
  }

  deleteByName(projectId: string, name: string) {
    return this.store.deleteByName(projectId, name);
  }

  /**
   * Email lifecycle from messaging: an `email.<type>` event plus a row the filters read. Test mail
   * (a campaign or template test send) is no engagement of the contact: it records nothing. Messages
   * handled at once (EMAIL_ACTIVITY_SUBSCRIPTION) share one set-based write.
   */
  async recordEmailActivity(messageId: string, m: EmailLifecycle): Promise<void> {
    await this.recordEmailSteps(messageId, [m]);
  }

  /**
   * A `deliveries.emails_sent` message: its emails as if each had come as its own `emails.sent`, written together
   * (one processed_messages row for the message; a redelivery writes nothing).
   */
  async recordEmailsSent(messageId: string, m: EmailsSent): Promise<void> {
    await this.recordEmailSteps(
      messageId,
      m.emails.filter((e) => e.type === 'sent'),
    );
  }

  private async recordEmailSteps(messageId: string, steps: EmailLifecycle[]): Promise<void> {
    const items = steps
      .filter((m) => !m.test && isUuid(m.projectId) && isUuid(m.contactId))
      .map((m) => ({ m, at: m.occurredAt ? timestampDate(m.occurredAt) : new Date() }));
    if (items.length) await this.emailActivity.submit({ messageId, items });
  }

  /**
   * Messages seen for the first time (redeliveries skipped, by message id), of contacts that still exist
   * (deleted since the email went out: nothing), become email_activity rows and `email.<type>` events, published
   * as one `events.emails` per project of the batch (EventsStore.writeEmailActivity): one statement per batch.
   */
  private async writeEmailActivity(
    tx: Queryable,
    writes: EmailActivityWrite[],
    contexts: Array<RequestContext | undefined>,
  ): Promise<void> {
    await this.store.writeEmailActivity(
      tx,
      'email-activity',
      writes.flatMap((w, i) => {
        const context = outgoingContext(contexts[i]);
        // Checked as the batch is written: a deletion recorded while the message waited in the batch drops it too.
        const live = w.items
          .map((x, item) => ({ ...x, item }))
          .filter(({ m, at }) => !this.wiped.drops(m.projectId, at));
        return live.map(({ m, at, item }) => ({
          messageId: w.messageId,
          item,
          projectId: m.projectId,
          contactId: m.contactId,
          emailId: m.emailId,
          type: m.type,
          at,
          eventId: uuidv7(),
          data: { emailId: m.emailId, ...(m.data ?? {}) },
          context,
        }));
      }),
    );
  }
}
