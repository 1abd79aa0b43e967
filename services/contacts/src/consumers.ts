import type { Bus } from '@svc/lib/bus';
import { on, subscribeTopics } from '@svc/lib/bus-topic';
import type { Logger } from '@svc/lib/logger';
import type { WipedProjects } from '@svc/lib/project-tombstones';
import { joinProjectWipes, type WipeReports } from '@svc/lib/project-wipe';
import { MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import { SEGMENTS_TOPICS } from '@svc/proto/topics/segments';
import { EMAIL_ACTIVITY_SUBSCRIPTION, EMAILS_SENT_SUBSCRIPTION, type Events } from './domain/events.js';
import { SEGMENT_EVENTS_SUBSCRIPTION, type SegmentEvents } from './domain/segment-events.js';
import type { ContactsStore } from './store/contacts-store.js';

interface ConsumerDeps {
  events: Events;
  segmentEvents: SegmentEvents;
  contacts: ContactsStore;
  forgetTypes(projectId: string): void;
  identity: WipeReports;
  /** Started; a deleted project's messages are acknowledged unread (lib/project-tombstones.ts). */
  wiped: WipedProjects;
  logger: Logger;
}

/**
 * What the contacts service hears on the bus: email lifecycle (for filters), segment entry/exit
 * and its step of project resets and deletions.
 */
export async function subscribeContactsConsumers(bus: Bus, d: ConsumerDeps): Promise<void> {
  await subscribeTopics(
    bus,
    'contacts-email-activity',
    d.wiped.routes([on(MESSAGING_TOPICS.emailLifecycle, (m, meta) => d.events.recordEmailActivity(meta.id, m))]),
    d.logger,
    EMAIL_ACTIVITY_SUBSCRIPTION,
  );
  // Sent mail comes many emails per message from the delivery worker (instead of one `emails.sent` each).
  await subscribeTopics(
    bus,
    'contacts-emails-sent',
    d.wiped.routes([on(MESSAGING_TOPICS.emailsSent, (m, meta) => d.events.recordEmailsSent(meta.id, m))]),
    d.logger,
    EMAILS_SENT_SUBSCRIPTION,
  );
  await subscribeTopics(
    bus,
    'contacts-segment-membership',
    d.wiped.routes([on(SEGMENTS_TOPICS.membershipChanged, (m, meta) => d.segmentEvents.record(meta.id, m))]),
    d.logger,
    SEGMENT_EVENTS_SUBSCRIPTION,
  );
  await joinProjectWipes(bus, {
    service: 'contacts',
    identity: d.identity,
    wiped: d.wiped,
    logger: d.logger,
    async wipe(projectId) {
      await d.contacts.deleteProject(projectId);
      d.forgetTypes(projectId);
    },
  });
}
