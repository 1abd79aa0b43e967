import { randomUUID } from 'node:crypto';
import { uuidv7 } from '@svc/lib/ids';
import type { Queryable } from '@svc/lib/db';
import { outgoingContext, type RequestContext } from '@svc/lib/request-context';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import type { EventRow } from '../store/contact-rows.js';
import type { ContactBatches, LockedContact } from '../store/contacts-store.js';
import type { Contacts } from './contacts.js';
import { templateVariables } from '@svc/lib/json-object';
import { applyDataPatch, isPlainObject, type DataPatch } from './custom-data.js';
import { nextSubscription, subscriptionEvent } from './subscription.js';

/**
 * A batch's new contacts and its events go out as batch messages, one per project (`contacts.created_batch`,
 * `events.tracked_batch`), instead of one `contacts.created` and one `events.tracked` each (README "Messages on the
 * bus"); a contact the batch changes, as its own `contacts.updated`.
 */
const TRACK_SUBJECTS = {
  createdBatch: CONTACTS_TOPICS.createdBatch.subject,
  updated: CONTACTS_TOPICS.updated.subject,
  eventsBatch: CONTACTS_TOPICS.eventsTrackedBatch.subject,
};

export interface TrackWrite {
  projectId: string;
  email: string;
  name: string;
  subscribed?: boolean;
  patch: DataPatch;
}

export interface Tracked {
  contactId: string;
  event: EventRow;
}

// A null deletes a key of the contact (rule 3), at any depth: it is no value of the event.
function withoutDeletions(patch: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(patch).flatMap(([k, v]) => (v === null ? [] : [[k, isPlainObject(v) ? withoutDeletions(v) : v]])),
  );
}

/**
 * The event a track records: the values sent with it, persistent and one-off. A one-off value nested in an
 * object joins that object's persistent values (`{d: 2, c: one-off}` records both), as a template sees them.
 */
export const trackedEventData = (patch: DataPatch) => templateVariables(withoutDeletions(patch.patch), patch.oneOff);

/**
 * A batch of tracks in two statements (one round trip each): lock the batch's contacts, apply every
 * write in order in memory (the same rules as the one-by-one path: custom data, subscription, flip
 * events), then insert/update contacts, insert events and enqueue their messages in one statement
 * (ContactBatches.writeTracks, TRACK_SUBJECTS). The messages carry each contact's final state in the batch. Field
 * types add statements only when a new field appears. `transaction.own`: the lock opens the transaction
 * and the write commits it (`BEGIN` and `COMMIT` in the same round trips).
 */
export async function writeTrackBatch(
  tx: Queryable,
  d: { batches: ContactBatches; contacts: Contacts },
  writes: TrackWrite[],
  contexts: Array<RequestContext | undefined> = [],
  transaction: { own?: boolean } = {},
): Promise<Tracked[]> {
  const key = (projectId: string, email: string) => `${projectId}:${email.toLowerCase()}`;
  const state = new Map<string, { row: LockedContact; isNew: boolean; dirty: boolean }>();
  for (const row of await d.batches.lockByKeys(tx, writes, { begin: transaction.own }))
    state.set(key(row.project_id, row.email), { row, isNew: false, dirty: false });

  const events: Array<{ id: string; projectId: string; contactId: string; name: string; data: object }> = [];
  const answers: Array<{ contactId: string; eventId: string }> = [];
  // Each message carries the request of the write that caused it (a contact's: its last write).
  const requestOf = new Map<string, RequestContext | undefined>();
  for (const [i, w] of writes.entries()) {
    const k = key(w.projectId, w.email);
    let entry = state.get(k);
    if (!entry) {
      const row: LockedContact = {
        id: randomUUID(),
        project_id: w.projectId,
        email: w.email,
        subscribed: nextSubscription(undefined, w.subscribed, true, 'track'),
        data: applyDataPatch({}, w.patch.patch).data,
      };
      entry = { row, isNew: true, dirty: false };
      state.set(k, entry);
    } else {
      const { data, changed } = applyDataPatch(entry.row.data, w.patch.patch);
      const subscribed = nextSubscription(entry.row.subscribed, w.subscribed, true, 'track');
      const flip = subscriptionEvent(entry.row.subscribed, subscribed);
      if (flip) {
        const id = uuidv7();
        events.push({ id, projectId: w.projectId, contactId: entry.row.id, name: flip, data: {} });
        requestOf.set(id, contexts[i]);
      }
      if (changed || flip) entry = { ...entry, row: { ...entry.row, data, subscribed }, dirty: true };
      state.set(k, entry);
    }
    const eventId = uuidv7();
    events.push({
      id: eventId,
      projectId: w.projectId,
      contactId: entry.row.id,
      name: w.name,
      data: trackedEventData(w.patch),
    });
    answers.push({ contactId: entry.row.id, eventId });
    requestOf.set(eventId, contexts[i]).set(entry.row.id, contexts[i]);
  }

  // Each project's new contacts, then its changed ones, then the events: the outbox keeps that order.
  const written: Array<{ row: LockedContact; isNew: boolean }> = [];
  const byProject = new Map<string, Array<{ row: LockedContact; isNew: boolean; dirty: boolean }>>();
  for (const e of state.values()) byProject.set(e.row.project_id, [...(byProject.get(e.row.project_id) ?? []), e]);
  for (const [projectId, entries] of byProject) {
    const fresh = entries.filter((e) => e.isNew);
    const changed = entries.filter((e) => e.dirty && !e.isNew);
    written.push(...fresh, ...changed);
    await d.contacts.recordTypesOfMany(
      tx,
      projectId,
      [...fresh, ...changed].map((e) => e.row.data),
    );
  }
  const context = (id: string) => outgoingContext(requestOf.get(id));
  const batch = {
    contacts: written.map(({ row, isNew }) => ({
      id: row.id,
      projectId: row.project_id,
      email: row.email,
      subscribed: row.subscribed,
      data: row.data,
      isNew,
      context: context(row.id),
    })),
    events: events.map((e) => ({ ...e, context: context(e.id) })),
  };
  const at = await d.batches.writeTracks(tx, batch, TRACK_SUBJECTS, { commit: transaction.own });
  const byId = new Map<string, EventRow>(
    events.map((e) => [
      e.id,
      {
        id: e.id,
        project_id: e.projectId,
        contact_id: e.contactId,
        name: e.name,
        data: e.data as Record<string, unknown>,
        created_at: at,
      },
    ]),
  );
  return answers.map((a) => ({ contactId: a.contactId, event: byId.get(a.eventId)! }));
}
