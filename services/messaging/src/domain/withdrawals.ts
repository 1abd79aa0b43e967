import { on, onBatch, readBatchItem, type TopicRoute } from '@svc/lib/bus-topic';
import { type Pool, withTransaction } from '@svc/lib/db';
import { isUuid } from '@svc/lib/ids';
import { enqueueMany } from '@svc/lib/outbox';
import { type EventTracked, EventTrackedSchema } from '@svc/proto/svc/contacts/v1/events_pb';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import type { EmailsStore } from '../store/emails-store.js';
import { lifecycleMessage } from './email-events.js';

/**
 * Marketing mail is checked against the contact's subscription when it is queued; a campaign's send window or a
 * deferral can keep it queued for a while after that. When the contacts service records `contact.unsubscribed`,
 * whatever marketing mail is still queued for the contact is withdrawn at once, and an `emails.suppressed`
 * lifecycle message tells the campaign (its recipient is counted as suppressed), the contact's timeline and the
 * activity feed. Redelivery withdraws nothing more: the rows are no longer queued.
 */
export class MarketingWithdrawals {
  constructor(
    private readonly pool: Pool,
    private readonly emails: EmailsStore,
  ) {}

  routes(): TopicRoute[] {
    const route = on(CONTACTS_TOPICS.eventTracked, (m) => this.onTracked(m));
    // It shares the feed's delivery of every tracked event: all but unsubscribes are passed over undecoded.
    const unsubscribe = (data: unknown) => (data as { name?: unknown } | null)?.name === 'contact.unsubscribed';
    // A batch of tracks' events: its unsubscribes alone are decoded, each on its own (an unreadable one is skipped).
    const batch = onBatch(CONTACTS_TOPICS.eventsTrackedBatch, 'events', async ({ projectId, items }) => {
      for (const item of items) {
        const m = unsubscribe(item) ? readBatchItem(EventTrackedSchema, item) : undefined;
        if (m?.projectId === projectId) await this.onTracked(m);
      }
    });
    return [
      { subject: route.subject, deliver: (m) => (unsubscribe(m.data) ? route.deliver(m) : Promise.resolve()) },
      batch,
    ];
  }

  private async onTracked(m: EventTracked): Promise<void> {
    if (m.name !== 'contact.unsubscribed' || !isUuid(m.projectId) || !isUuid(m.contactId)) return;
    await this.withdraw(m.projectId, m.contactId);
  }

  /** Answers how many emails were withdrawn. */
  async withdraw(projectId: string, contactId: string): Promise<number> {
    return withTransaction(this.pool, async (tx) => {
      const withdrawn = await this.emails.withdrawMarketing(tx, projectId, contactId);
      await enqueueMany(
        tx,
        withdrawn.map((e) => lifecycleMessage(e, 'suppressed', { reason: 'unsubscribed', withdrawn: true })),
      );
      return withdrawn.length;
    });
  }
}
