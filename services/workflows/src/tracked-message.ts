import { timestampDate } from '@bufbuild/protobuf/wkt';
import { readBatchItem } from '@svc/lib/bus-topic';
import { type EventTracked, EventTrackedSchema } from '@svc/proto/svc/contacts/v1/events_pb';
import type { TrackedEvent } from './domain/executions.js';

/** What the workflows consumers take of an `events.tracked` message: the tracked event the engine reacts to. */
export type TrackedMessage = TrackedEvent;

/** A decoded EventTracked (an event without an id is keyed by its bus message id). */
export function trackedMessage(m: EventTracked, messageId: string): TrackedMessage {
  return {
    projectId: m.projectId,
    contactId: m.contactId,
    eventId: m.eventId || messageId,
    name: m.name,
    data: (m.data ?? {}) as Record<string, unknown>,
    at: m.createdAt ? timestampDate(m.createdAt) : new Date(),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const optionalString = (v: unknown): v is string | undefined => v === undefined || typeof v === 'string';

/**
 * trackedMessage of a payload as received, read as it is rather than decoded into an EventTracked (every tracked
 * event comes through here; the decode was about a third of handling one): `undefined` when the payload is not in
 * the form contacts writes (its eventTrackedJson), to be decoded.
 */
export function trackedPayload(payload: unknown, messageId: string): TrackedMessage | undefined {
  if (!isObject(payload)) return undefined;
  const { projectId, contactId, eventId, name, data, createdAt } = payload;
  // Always written by contacts; missing, they may be under their proto names (project_id), which the decode reads.
  if (typeof projectId !== 'string' || typeof contactId !== 'string' || typeof name !== 'string') return undefined;
  if (!optionalString(eventId) || !optionalString(createdAt) || (data !== undefined && !isObject(data)))
    return undefined;
  const at = createdAt === undefined ? new Date() : new Date(createdAt);
  if (Number.isNaN(at.getTime())) return undefined;
  return {
    projectId,
    contactId,
    eventId: eventId || messageId,
    name,
    data: data ?? {},
    at,
  };
}

/**
 * An event of an `events.tracked_batch` (each as `events.tracked` carries it), read as trackedPayload reads one
 * message, else decoded; `undefined` when it does not decode (that event is skipped, the others are not). An event
 * of another project than its batch's is not read either: consumers skip a batch by its project alone.
 * `messageId` keys an event without an id (the batch's bus id and the event's place in it).
 */
export function trackedItem(projectId: string, item: unknown, messageId: string): TrackedMessage | undefined {
  let m = trackedPayload(item, messageId);
  if (m === undefined) {
    const decoded = readBatchItem(EventTrackedSchema, item);
    m = decoded && trackedMessage(decoded, messageId);
  }
  return m?.projectId === projectId ? m : undefined;
}
