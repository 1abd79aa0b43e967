import { busMessage, type OutboxMessage } from '@svc/lib/bus-topic';
import { withTransaction, type Pool } from '@svc/lib/db';
import type { NotifiedCache } from '@svc/lib/notified-cache';
import { enqueueMany } from '@svc/lib/outbox';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { SEGMENTS_TOPICS } from '@svc/proto/topics/segments';
import type { MembershipsStore } from '../store/memberships-store.js';
import type { SegmentRow } from '../store/segment-row.js';
import type { SegmentsStore } from '../store/segments-store.js';
import { membersOf, type ContactsPort } from './contacts-port.js';

const changed = (s: SegmentRow, contactId: string, change: 'entry' | 'exit'): OutboxMessage =>
  busMessage(SEGMENTS_TOPICS.membershipChanged, {
    projectId: s.project_id,
    segmentId: s.id,
    slug: s.slug,
    contactId,
    change,
    occurredAt: timestampFromDate(new Date()),
  });

/**
 * Stored membership of tracked DYNAMIC segments. Every writer locks the segment rows it changes
 * (compute one, a contact's re-evaluation all of the project's, in id order) before it evaluates,
 * so a later writer always evaluates after an earlier one committed: no entry or exit is lost or
 * doubled. An entry/exit message is written only for a membership row really inserted or deleted,
 * in the same transaction (outbox), and the contacts service records it as an event.
 */
export class Tracking {
  constructor(
    private readonly pool: Pool,
    private readonly store: SegmentsStore,
    private readonly memberships: MembershipsStore,
    private readonly contacts: ContactsPort,
    /** Whether a project tracks any segment, kept until a segment's tracking changes (store migration 002). */
    private readonly tracksAny?: NotifiedCache,
    /** The broker's delivery of contact changes, paused while no segment is tracked (membership-deliveries.ts). */
    private readonly deliveries?: { sync(): Promise<void> },
  ) {}

  /** The whole segment against its condition; `events: false` takes a silent baseline (tracking just turned on). */
  async compute(segment: SegmentRow, opts: { events: boolean }) {
    // The segment is stored as tracked: deliveries restart (if paused) before the baseline reads the contacts.
    await this.deliveries?.sync();
    return withTransaction(this.pool, async (tx) => {
      const s = (await this.store.get(tx, segment.project_id, segment.id, 'write')) ?? segment;
      const now = new Set<string>();
      for await (const ids of this.contacts.streamIds(s.project_id, membersOf(s.id))) for (const id of ids) now.add(id);
      const before = new Set(await this.memberships.members(tx, s.id));
      const entered = await this.memberships.add(
        tx,
        s.id,
        [...now].filter((id) => !before.has(id)),
      );
      const exited = await this.memberships.remove(
        tx,
        s.id,
        [...before].filter((id) => !now.has(id)),
      );
      if (opts.events) {
        await enqueueMany(tx, [
          ...entered.map((c) => changed(s, c, 'entry')),
          ...exited.map((c) => changed(s, c, 'exit')),
        ]);
      }
      const row = await this.store.setCount(tx, s.id, now.size);
      return { segment: row, entered: entered.length, exited: exited.length };
    });
  }

  /**
   * Before a tracked STATIC segment's members change: one tracked before static segments were (members, no
   * stored membership) takes its silent baseline, so its existing members do not all "enter" at the change.
   */
  async baselineStatic(segment: SegmentRow): Promise<void> {
    if (Number(segment.member_count) > 0 && !(await this.memberships.any(this.pool, segment.id)))
      await this.compute(segment, { events: false });
  }

  /** Whether the project is known (cached, no read) to track no segment: its contacts' changes need no work. */
  tracksNothing(projectId: string): boolean {
    return this.tracksAny?.peek(projectId) === false;
  }

  /** One contact changed (data, subscription, an event): re-evaluated against the project's tracked segments only. */
  async contactChanged(projectId: string, contactId: string): Promise<void> {
    // Most projects track nothing: a cached read instead of a transaction per contact message (a campaign's
    // email.* events alone are thousands a second). A segment tracked from now on is computed when it is.
    const load = () => this.store.hasTracked(projectId);
    if (!(await (this.tracksAny ? this.tracksAny.get(projectId, load) : load()))) return;
    await withTransaction(this.pool, async (tx) => {
      const tracked = await this.store.trackedForUpdate(tx, projectId);
      if (!tracked.length) return;
      const ids = tracked.map((s) => s.id);
      const now = new Set(await this.contacts.match(projectId, contactId, ids));
      const before = new Set(await this.memberships.segmentsOf(tx, contactId, ids));
      const messages: OutboxMessage[] = [];
      for (const s of tracked) {
        if (now.has(s.id) && !before.has(s.id) && (await this.memberships.add(tx, s.id, [contactId])).length) {
          messages.push(changed(s, contactId, 'entry'));
          await this.store.addToCount(tx, s.id, 1);
        } else if (
          !now.has(s.id) &&
          before.has(s.id) &&
          (await this.memberships.remove(tx, s.id, [contactId])).length
        ) {
          messages.push(changed(s, contactId, 'exit'));
          await this.store.addToCount(tx, s.id, -1);
        }
      }
      await enqueueMany(tx, messages);
    });
  }

  /** A deleted contact leaves its tracked segments silently (its events went with it). */
  async contactDeleted(contactId: string): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      for (const segmentId of await this.memberships.removeContact(tx, contactId))
        await this.store.addToCount(tx, segmentId, -1);
    });
  }

  stopTracking(segmentId: string): Promise<void> {
    return this.memberships.clear(this.pool, segmentId);
  }
}
