import { topic } from '@svc/lib/bus-topic';
import {
  ContactChangedSchema,
  ContactDeletedSchema,
  ContactsCreatedBatchSchema,
  ContactsImportedSchema,
  EmailEventsTrackedSchema,
  EventsTrackedBatchSchema,
  EventTrackedSchema,
} from '../gen/svc/contacts/v1/events_pb.js';

/** Subjects the contacts service publishes, and their messages. */
export const CONTACTS_TOPICS = {
  /**
   * One contact created by the API, a send or a track written alone (the new contacts of a batch of tracks come as
   * `createdBatch`, a CSV import's as `imported`).
   */
  created: topic('contacts.created', ContactChangedSchema),
  /**
   * The contacts a batch of tracks created, one project's per message, each as `created` carries it: what contacts
   * publishes for them instead of one `created` each (consumers of `created` read both; upgrade them before contacts).
   */
  createdBatch: topic('contacts.created_batch', ContactsCreatedBatchSchema),
  /** The contacts a CSV import created, by id, many per message: consumers of `created` take this one too. */
  imported: topic('contacts.imported', ContactsImportedSchema),
  updated: topic('contacts.updated', ContactChangedSchema),
  deleted: topic('contacts.deleted', ContactDeletedSchema),
  eventTracked: topic('events.tracked', EventTrackedSchema),
  /**
   * The events a batch of tracks recorded (client events, `contact.*`), one project's per message, each as
   * `eventTracked` carries it: what contacts publishes for them instead of one `eventTracked` each, and for the
   * `segment.*` events of a batch of `segments.membership.changed` (contact changes through the API and a track
   * written alone still publish `eventTracked`). Consumers read both; upgrade them before contacts.
   */
  eventsTrackedBatch: topic('events.tracked_batch', EventsTrackedBatchSchema),
  /**
   * The `email.<type>` events contacts records from messaging's `emails.<type>`, on their own subject: the
   * services that take the lifecycle itself (workflows, the activity feed) need not receive them twice.
   */
  emailEventTracked: topic('events.email', EventTrackedSchema),
  /**
   * The same `email.<type>` events, a batch of them of one project per message: what contacts publishes now instead of
   * one `events.email` each (segments reads both; upgrade it before contacts).
   */
  emailEventsTracked: topic('events.emails', EmailEventsTrackedSchema),
} as const;
