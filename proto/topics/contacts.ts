import { topic } from '@svc/lib/bus-topic';
import {
  ContactChangedSchema,
  ContactDeletedSchema,
  ContactsImportedSchema,
  EmailEventsTrackedSchema,
  EventTrackedSchema,
} from '../gen/svc/contacts/v1/events_pb.js';

/** Subjects the contacts service publishes, and their messages. */
export const CONTACTS_TOPICS = {
  /** One contact created by the API, a track or a send (a CSV import's new contacts come as `imported`). */
  created: topic('contacts.created', ContactChangedSchema),
  /** The contacts a CSV import created, by id, many per message: consumers of `created` take this one too. */
  imported: topic('contacts.imported', ContactsImportedSchema),
  updated: topic('contacts.updated', ContactChangedSchema),
  deleted: topic('contacts.deleted', ContactDeletedSchema),
  eventTracked: topic('events.tracked', EventTrackedSchema),
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
