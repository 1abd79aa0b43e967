import type { MembershipChanged } from '@svc/proto/svc/segments/v1/events_pb';
import type { Pool, Queryable } from '@svc/lib/db';
import type { WipedProjects } from '@svc/lib/project-tombstones';
import { GroupCommit } from '@svc/lib/group-commit';
import { isUuid, uuidv7 } from '@svc/lib/ids';
import { outgoingContext, type RequestContext } from '@svc/lib/request-context';
import type { EventsStore, SegmentEventWrite } from '../store/events-store.js';

const CHANGES = new Set(['entry', 'exit']);

/** Entry and exit messages handled at once by the consumer, and written in one statement at most. */
const SEGMENT_EVENTS_CONCURRENCY = 256;

/**
 * How contacts subscribes to `segments.membership.changed`: each message adds its own event, so messages are taken
 * many at once (a tracked segment computed over a big import sends thousands; one transaction each kept every
 * other project's entries and exits waiting behind them). They are submitted in delivery order, and one statement
 * writes them in that order, so a contact's entry and exit keep theirs.
 */
export const SEGMENT_EVENTS_SUBSCRIPTION = { concurrency: SEGMENT_EVENTS_CONCURRENCY };

/** The processed-messages consumer name of these messages (redeliveries record nothing twice). */
const CONSUMER = 'segment-membership';

/**
 * Entry and exit of tracked segments, heard from the segments service, recorded as the events
 * `segment.<slug>.entry` / `.exit`: stored and published like tracked events (filters, activity, workflows), in
 * `events.tracked_batch` messages. Messages arriving together share one statement (EventsStore.writeSegmentEvents).
 */
export class SegmentEvents {
  private readonly commits: GroupCommit<SegmentEventWrite, void>;

  constructor(pool: Pool, events: EventsStore, wiped: Pick<WipedProjects, 'drops'> = { drops: () => false }) {
    const writeMany = async (
      tx: Queryable,
      writes: SegmentEventWrite[],
      contexts: Array<RequestContext | undefined>,
    ) => {
      // A deleted project's entries and exits (lib/project-tombstones.ts) are dropped as the batch is written; a
      // reset project's, at the consumer (WipedProjects.routes: they carry no time here).
      const live = writes.flatMap((w, i) =>
        wiped.drops(w.projectId) ? [] : [{ ...w, context: outgoingContext(contexts[i]) }],
      );
      if (live.length) await events.writeSegmentEvents(tx, CONSUMER, live);
      return writes.map(() => undefined);
    };
    this.commits = new GroupCommit(
      () => pool.connect(),
      async (tx, w) => {
        await writeMany(tx, [w], []);
      },
      { maxBatch: SEGMENT_EVENTS_CONCURRENCY, oneStatement: () => true, writeMany },
    );
  }

  async record(messageId: string, m: MembershipChanged): Promise<void> {
    if (!isUuid(m.projectId) || !isUuid(m.contactId) || !CHANGES.has(m.change) || !/^[a-z0-9_-]+$/.test(m.slug)) return;
    await this.commits.submit({
      messageId,
      projectId: m.projectId,
      contactId: m.contactId,
      segmentId: m.segmentId,
      name: `segment.${m.slug}.${m.change}`,
      eventId: uuidv7(),
    });
  }
}
