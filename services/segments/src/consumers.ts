import type { Bus } from '@svc/lib/bus';
import { on, onBatch, rawField, readBatchItem, subscribeTopics } from '@svc/lib/bus-topic';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import type { WipedProjects } from '@svc/lib/project-tombstones';
import { joinProjectWipes, type WipeReports } from '@svc/lib/project-wipe';
import { ContactSnapshotSchema, EventTrackedSchema } from '@svc/proto/svc/contacts/v1/events_pb';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import type { Tracking } from './domain/tracking.js';
import type { SegmentsStore } from './store/segments-store.js';

const MEMBERSHIP_DURABLE = 'segments-membership';

/** Tracked-event messages handled at once (a project that tracks segments still takes them one by one: its lock). */
const EVENT_CONCURRENCY = 64;

/**
 * Incremental membership of tracked segments: a contact's data change, subscription change or
 * tracked event re-evaluates that one contact (tracking.ts), never a whole segment. Each handler
 * reads the current state, so redelivery and any order of messages converge.
 */
export async function subscribeSegmentsConsumers(
  bus: Bus,
  tracking: Tracking,
  store: SegmentsStore,
  identity: WipeReports,
  wiped: WipedProjects,
  logger: Logger,
) {
  const changed = (projectId: string, contactId: string) =>
    isUuid(projectId) && isUuid(contactId) ? tracking.contactChanged(projectId, contactId) : Promise.resolve();
  // A project known to track no segment: its messages are acknowledged undecoded (most projects, most messages).
  const untracked = { skip: (data: unknown) => tracking.tracksNothing(rawField(data, 'projectId')) };
  // The contacts of a batch message's items (read as received, else decoded; one that does not read is skipped),
  // each re-evaluated once.
  const changedMany = async (projectId: string, ids: Iterable<string>) => {
    for (const id of new Set(ids)) await changed(projectId, id);
  };
  const contactRoutes = [
    on(CONTACTS_TOPICS.created, async (m) => changed(m.projectId, m.contact?.id ?? ''), untracked),
    // A batch of tracks' new contacts, many per message.
    onBatch(
      CONTACTS_TOPICS.createdBatch,
      'contacts',
      async (b) =>
        changedMany(
          b.projectId,
          b.items.map((c) => rawField(c, 'id') || (readBatchItem(ContactSnapshotSchema, c)?.id ?? '')),
        ),
      untracked,
    ),
    // A CSV import's new contacts, many per message: each is re-evaluated as one created alone would be.
    on(CONTACTS_TOPICS.imported, async (m) => {
      for (const id of m.contactIds) await changed(m.projectId, id);
    }),
    on(CONTACTS_TOPICS.updated, async (m) => changed(m.projectId, m.contact?.id ?? ''), untracked),
    on(CONTACTS_TOPICS.deleted, async (m) => (isUuid(m.contactId) ? tracking.contactDeleted(m.contactId) : undefined)),
  ];
  await subscribeTopics(bus, MEMBERSHIP_DURABLE, wiped.routes(contactRoutes), logger);
  // Tracked events come by the thousand during a campaign (its email.* events): handled many at once (most
  // projects track nothing, a cached answer: tracking.ts), not one ack round after another. Same durable.
  const eventRoutes = [
    on(CONTACTS_TOPICS.eventTracked, async (m) => changed(m.projectId, m.contactId), untracked),
    // The email.* events contacts records (a filter may count them) come on their own subject.
    on(CONTACTS_TOPICS.emailEventTracked, async (m) => changed(m.projectId, m.contactId), untracked),
    // A batch of tracks' events, many per message.
    onBatch(
      CONTACTS_TOPICS.eventsTrackedBatch,
      'events',
      async (b) =>
        changedMany(
          b.projectId,
          b.items.map((e) => rawField(e, 'contactId') || (readBatchItem(EventTrackedSchema, e)?.contactId ?? '')),
        ),
      untracked,
    ),
    // What contacts publishes for them now: a batch of one project per message, each contact re-evaluated once.
    on(
      CONTACTS_TOPICS.emailEventsTracked,
      async (m) =>
        changedMany(
          m.projectId,
          m.events.map((e) => e.contactId),
        ),
      untracked,
    ),
  ];
  await subscribeTopics(bus, MEMBERSHIP_DURABLE, wiped.routes(eventRoutes), logger, {
    concurrency: EVENT_CONCURRENCY,
  });
  await joinProjectWipes(bus, {
    service: 'segments',
    identity,
    wiped,
    logger,
    wipe: (p) => store.removeProject(p),
  });
  // None of them does anything while no project tracks a segment (membership-deliveries.ts).
  return { durable: MEMBERSHIP_DURABLE, subjects: [...contactRoutes, ...eventRoutes].map((r) => r.subject) };
}
