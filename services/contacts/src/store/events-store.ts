import type { Pool, Queryable } from '@svc/lib/db';
import type { EventRow } from './contact-rows.js';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { batchParts, eventTrackedJson, trackBatchMessages } from './contacts-store.js';

/** Names clients track: not the platform's own (isReservedEventName in lib/src/event-names.ts). */
const CLIENT_TRACKED = `name NOT LIKE 'email.%' AND name NOT IN ('contact.subscribed', 'contact.unsubscribed')
  AND name !~ '^segment\\.[^.]+\\.(entry|exit)$'`;

/**
 * `email.*` events per `events.emails` message at most: a bus message stays far below NATS's 1 MB payload limit even
 * with 998-character subjects in every event's data (about 3.5 KB an event).
 */
export const EMAIL_EVENTS_PER_MESSAGE = 100;

/**
 * The CTEs `fresh` and `kept` over the batch `w` (message_id, project_id, contact_id, n, ...): the rows of messages the
 * consumer `$2` sees for the first time (one processed_messages row each), the first copy of each `distinct` only, and
 * only if its contact still exists (an event needs its contact). The contact is probed by primary key per row: a join
 * let a planner without statistics read every contact.
 */
const firstSeenOfLiveContacts = (distinct: string) => `fresh AS (
         INSERT INTO processed_messages (consumer, message_id) SELECT DISTINCT $2::text, message_id FROM w
         ON CONFLICT DO NOTHING RETURNING message_id
       ), kept AS (
         SELECT DISTINCT ON (${distinct}) w.* FROM w JOIN fresh USING (message_id)
           CROSS JOIN LATERAL (
             SELECT 1 FROM contacts c WHERE c.project_id = w.project_id AND c.id = w.contact_id LIMIT 1
           ) c
         ORDER BY ${distinct}, w.n
       )`;

/** A `segments.membership.changed` message as contacts records it: the event `name` (`segment.<slug>.<change>`). */
export interface SegmentEventWrite {
  messageId: string;
  projectId: string;
  contactId: string;
  segmentId: string;
  name: string;
  eventId: string;
}

export class EventsStore {
  constructor(readonly pool: Pool) {}

  async insert(
    tx: Queryable,
    e: { id: string; projectId: string; contactId: string; name: string; data: object },
  ): Promise<EventRow> {
    const { rows } = await tx.query<EventRow>(
      'INSERT INTO events (id, project_id, contact_id, name, data) VALUES ($1, $2, $3, $4, $5) RETURNING *',
      [e.id, e.projectId, e.contactId, e.name, JSON.stringify(e.data)],
    );
    return rows[0];
  }

  async list(q: {
    projectId: string;
    limit: number;
    name?: string;
    contactId?: string;
    after?: { at: string; id: string };
  }): Promise<Array<EventRow & { at: string }>> {
    const where = ['e.project_id = $1'];
    const params: unknown[] = [q.projectId];
    if (q.name) {
      params.push(q.name);
      where.push(`e.name = $${params.length}`);
    }
    if (q.contactId) {
      params.push(q.contactId);
      where.push(`e.contact_id = $${params.length}`);
    }
    if (q.after) {
      params.push(q.after.at, q.after.id);
      where.push(`(e.created_at, e.id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(q.limit + 1);
    const { rows } = await this.pool.query<EventRow & { at: string }>(
      `SELECT e.*, e.created_at::text AS at, c.email AS contact_email FROM events e
       LEFT JOIN contacts c ON c.id = e.contact_id
       WHERE ${where.join(' AND ')} ORDER BY e.created_at DESC, e.id DESC LIMIT $${params.length}`,
      params,
    );
    return rows;
  }

  async stats(
    projectId: string,
    days: number,
  ): Promise<{
    total: number;
    last24h: number;
    names: Array<{ name: string; count: number; contacts: number; last_seen: Date }>;
  }> {
    const totals = await this.pool.query<{ total: number; last24h: number }>(
      `SELECT count(*) AS total, count(*) FILTER (WHERE created_at > now() - interval '24 hours') AS last24h
       FROM events WHERE project_id = $1 AND created_at > now() - make_interval(days => $2)`,
      [projectId, days],
    );
    const names = await this.pool.query<{ name: string; count: number; contacts: number; last_seen: Date }>(
      `SELECT name, count(*) AS count, count(DISTINCT contact_id) AS contacts, max(created_at) AS last_seen
       FROM events WHERE project_id = $1 AND created_at > now() - make_interval(days => $2)
       GROUP BY name ORDER BY count(*) DESC, name LIMIT 100`,
      [projectId, days],
    );
    return { ...totals.rows[0], names: names.rows };
  }

  /**
   * The most frequent client-tracked names of the window (events_project_time). The platform's own names are
   * left out as isReservedEventName (lib/src/event-names.ts) defines them: email.*, contact.(un)subscribed,
   * segment.<slug>.entry/exit.
   */
  async topCustom(
    projectId: string,
    days: number,
    limit: number,
  ): Promise<Array<{ name: string; count: number; contacts: number; last_seen: Date }>> {
    const { rows } = await this.pool.query<{ name: string; count: number; contacts: number; last_seen: Date }>(
      `SELECT name, count(*) AS count, count(DISTINCT contact_id) AS contacts, max(created_at) AS last_seen
       FROM events WHERE project_id = $1 AND created_at > now() - make_interval(days => $2)
         AND ${CLIENT_TRACKED}
       GROUP BY name ORDER BY count(*) DESC, name LIMIT $3`,
      [projectId, days, limit],
    );
    return rows;
  }

  /** Client-tracked events since `since` (billing; events_project_time). */
  async countCustomSince(projectId: string, since: Date): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM events WHERE project_id = $1 AND created_at >= $2 AND ${CLIENT_TRACKED}`,
      [projectId, since],
    );
    return Number(rows[0].n);
  }

  async names(projectId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ name: string }>(
      'SELECT DISTINCT name FROM events WHERE project_id = $1 ORDER BY name',
      [projectId],
    );
    return rows.map((r) => r.name);
  }

  async deleteByName(projectId: string, name: string): Promise<number> {
    const { rowCount } = await this.pool.query('DELETE FROM events WHERE project_id = $1 AND name = $2', [
      projectId,
      name,
    ]);
    return rowCount ?? 0;
  }

  /** email_activity rows in one statement. */
  /**
   * A batch of email lifecycle messages in one statement: each step of a message id seen for the first time by
   * `consumer` (redeliveries and repeats in the batch left out; one processed row per message, whatever its number
   * of steps, so a message's steps must come in the same batch) whose contact still exists becomes an
   * email_activity row and an `email.<type>` event. The events go out as `events.emails` messages, one per project
   * and EMAIL_EVENTS_PER_MESSAGE events (EmailEventsTracked: each event's payload built here from the written row,
   * `eventTrackedJson`, in the order given), with the ids of the first request among them. The batch goes as one
   * JSON text of tuples.
   */
  async writeEmailActivity(
    tx: Queryable,
    consumer: string,
    writes: Array<{
      messageId: string;
      /** The step's place in its message (a `deliveries.emails_sent` holds many; an `emails.<type>` one, 0). */
      item: number;
      projectId: string;
      contactId: string;
      emailId: string;
      type: string;
      at: Date;
      eventId: string;
      data: object;
      context?: { requestId?: string | null; traceparent?: string | null };
    }>,
  ): Promise<void> {
    if (!writes.length) return;
    const tuples = JSON.stringify(
      writes.map((w) => [
        w.messageId,
        w.projectId,
        w.contactId,
        w.emailId,
        w.type,
        w.at,
        w.eventId,
        w.data,
        w.context?.requestId ?? null,
        w.context?.traceparent ?? null,
        w.item,
      ]),
    );
    await tx.query(
      `WITH w AS (
         SELECT x.r->>0 AS message_id, (x.r->>1)::uuid AS project_id, (x.r->>2)::uuid AS contact_id,
                x.r->>3 AS email_id, x.r->>4 AS type, (x.r->>5)::timestamptz AS at, (x.r->>6)::uuid AS event_id,
                x.r->7 AS data, x.r->>8 AS request_id, x.r->>9 AS traceparent, (x.r->>10)::int AS item, x.n
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(r, n)
       ), ${firstSeenOfLiveContacts('w.message_id, w.item')}, activity AS (
         INSERT INTO email_activity (project_id, contact_id, email_id, type, created_at)
         SELECT project_id, contact_id, email_id, type, at FROM kept ORDER BY n
       ), ev AS (
         INSERT INTO events (id, project_id, contact_id, name, data)
         SELECT event_id, project_id, contact_id, 'email.' || type, data FROM kept ORDER BY n
         RETURNING *
       )
       INSERT INTO outbox (subject, payload, request_id, traceparent)
       SELECT $3::text, jsonb_build_object('projectId', project_id, 'events', jsonb_agg(payload ORDER BY n)),
              (array_agg(request_id ORDER BY n))[1], (array_agg(traceparent ORDER BY n))[1]
       FROM (
         SELECT ev.project_id, kept.n, kept.request_id, kept.traceparent, ${eventTrackedJson('ev')} AS payload,
                (row_number() OVER (PARTITION BY ev.project_id ORDER BY kept.n) - 1) / $4::int AS part
         FROM ev JOIN kept ON kept.event_id = ev.id
       ) e GROUP BY project_id, part ORDER BY min(n)`,
      [tuples, consumer, CONTACTS_TOPICS.emailEventsTracked.subject, EMAIL_EVENTS_PER_MESSAGE],
    );
  }

  /**
   * A batch of `segments.membership.changed` messages in one statement: each message seen for the first time by
   * `consumer` (redeliveries and repeats in the batch left out), of a contact that still exists, becomes the event
   * `segment.<slug>.<change>` (data: segmentId), published in `events.tracked_batch` messages (one per project and
   * TRACK_ITEMS_PER_MESSAGE events at most, as a batch of tracks publishes them), in the order given.
   */
  async writeSegmentEvents(
    tx: Queryable,
    consumer: string,
    writes: Array<SegmentEventWrite & { context?: { requestId?: string | null; traceparent?: string | null } }>,
  ): Promise<void> {
    if (!writes.length) return;
    // A segment event's payload is a few hundred bytes: its batch messages are cut by count alone.
    const parts = batchParts(writes, 0, () => 0);
    const tuples = JSON.stringify(
      writes.map((w, i) => [
        w.messageId,
        w.projectId,
        w.contactId,
        w.segmentId,
        w.name,
        w.eventId,
        w.context?.requestId ?? null,
        w.context?.traceparent ?? null,
        parts[i],
      ]),
    );
    await tx.query(
      `WITH w AS (
         SELECT x.r->>0 AS message_id, (x.r->>1)::uuid AS project_id, (x.r->>2)::uuid AS contact_id,
                x.r->>3 AS segment_id, x.r->>4 AS name, (x.r->>5)::uuid AS event_id, x.r->>6 AS request_id,
                x.r->>7 AS traceparent, (x.r->>8)::int AS part, x.n
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(r, n)
       ), ${firstSeenOfLiveContacts('w.message_id')}, ev AS (
         INSERT INTO events (id, project_id, contact_id, name, data)
         SELECT event_id, project_id, contact_id, name, jsonb_build_object('segmentId', segment_id) FROM kept ORDER BY n
         RETURNING *
       )
       INSERT INTO outbox (subject, payload, request_id, traceparent)
       SELECT $3::text, b.payload, b.request_id, b.traceparent
       FROM (${trackBatchMessages(
         `SELECT ev.project_id, kept.n, kept.part, ${eventTrackedJson('ev')} AS payload, kept.request_id,
                 kept.traceparent
          FROM ev JOIN kept ON kept.event_id = ev.id`,
         'events',
       )}) b ORDER BY b.n`,
      [tuples, consumer, CONTACTS_TOPICS.eventsTrackedBatch.subject],
    );
  }
}
