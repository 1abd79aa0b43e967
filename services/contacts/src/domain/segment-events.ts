import type { MembershipChanged } from '@svc/proto/svc/segments/v1/events_pb';
import { withTransaction, type Pool } from '@svc/lib/db';
import { isUuid, uuidv7 } from '@svc/lib/ids';
import { enqueueMessage } from '@svc/lib/outbox';
import type { ContactsStore } from '../store/contacts-store.js';
import type { EventsStore } from '../store/events-store.js';
import { eventTracked } from './bus-messages.js';

const CHANGES = new Set(['entry', 'exit']);

/**
 * Entry and exit of tracked segments, heard from the segments service, recorded as the events
 * `segment.<slug>.entry` / `.exit`: stored and published like any tracked event (filters, activity, workflows).
 */
export class SegmentEvents {
  constructor(
    private readonly pool: Pool,
    private readonly events: EventsStore,
    private readonly contacts: ContactsStore,
  ) {}

  async record(messageId: string, m: MembershipChanged): Promise<void> {
    if (!isUuid(m.projectId) || !isUuid(m.contactId) || !CHANGES.has(m.change) || !/^[a-z0-9_-]+$/.test(m.slug)) return;
    await withTransaction(this.pool, async (tx) => {
      if (!(await this.events.markProcessed(tx, 'segment-membership', messageId))) return;
      if (!(await this.contacts.byId(m.projectId, m.contactId))) return; // deleted since
      const event = await this.events.insert(tx, {
        id: uuidv7(),
        projectId: m.projectId,
        contactId: m.contactId,
        name: `segment.${m.slug}.${m.change}`,
        data: { segmentId: m.segmentId },
      });
      await enqueueMessage(tx, eventTracked(event));
    });
  }
}
