import type { JsonObject } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { busMessage, type OutboxMessage } from '@svc/lib/bus-topic';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import type { ContactRow, EventRow } from '../store/contact-rows.js';

// The messages contacts publishes (README "Messages on the bus"), built from stored rows: `data`
// comes from jsonb, so it is already plain JSON.

function snapshot(c: ContactRow) {
  return {
    projectId: c.project_id,
    contact: {
      id: c.id,
      email: c.email,
      subscribed: c.subscribed,
      data: c.data as JsonObject,
      createdAt: timestampFromDate(c.created_at),
      updatedAt: timestampFromDate(c.updated_at),
    },
  };
}

export const contactCreated = (c: ContactRow): OutboxMessage => busMessage(CONTACTS_TOPICS.created, snapshot(c));

export const contactUpdated = (c: ContactRow): OutboxMessage => busMessage(CONTACTS_TOPICS.updated, snapshot(c));

export const contactDeleted = (projectId: string, contactId: string, email: string): OutboxMessage =>
  busMessage(CONTACTS_TOPICS.deleted, { projectId, contactId, email });

/** `events.tracked`, or `events.email` for the `email.*` events recorded from the email lifecycle. */
export const eventTrackedTopic = (name: string) =>
  name.startsWith('email.') ? CONTACTS_TOPICS.emailEventTracked : CONTACTS_TOPICS.eventTracked;

export const eventTracked = (e: EventRow): OutboxMessage =>
  busMessage(eventTrackedTopic(e.name), {
    projectId: e.project_id,
    contactId: e.contact_id,
    eventId: e.id,
    name: e.name,
    data: e.data as JsonObject,
    createdAt: timestampFromDate(e.created_at),
  });
