import type { Pool, Queryable } from '@svc/lib/db';
import type { EventRow } from './contact-rows.js';

/** Names clients track: not the platform's own (isReservedEventName in domain/event-names.ts). */
const CLIENT_TRACKED = `name NOT LIKE 'email.%' AND name NOT IN ('contact.subscribed', 'contact.unsubscribed')
  AND name !~ '^segment\\.[^.]+\\.(entry|exit)$'`;

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

  async insertMany(
    tx: Queryable,
    events: Array<{ id: string; projectId: string; contactId: string; name: string; data: object }>,
  ): Promise<EventRow[]> {
    if (!events.length) return [];
    const { rows } = await tx.query<EventRow>(
      `INSERT INTO events (id, project_id, contact_id, name, data)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::jsonb[]) RETURNING *`,
      [
        events.map((e) => e.id),
        events.map((e) => e.projectId),
        events.map((e) => e.contactId),
        events.map((e) => e.name),
        events.map((e) => JSON.stringify(e.data)),
      ],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return events.map((e) => byId.get(e.id)!);
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
   * left out as isReservedEventName (domain/event-names.ts) defines them: email.*, contact.(un)subscribed,
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
  async insertEmailActivityMany(
    tx: Queryable,
    rows: Array<{ projectId: string; contactId: string; emailId: string; type: string; at: Date }>,
  ): Promise<void> {
    if (!rows.length) return;
    await tx.query(
      `INSERT INTO email_activity (project_id, contact_id, email_id, type, created_at)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::timestamptz[])`,
      [
        rows.map((r) => r.projectId),
        rows.map((r) => r.contactId),
        rows.map((r) => r.emailId),
        rows.map((r) => r.type),
        rows.map((r) => r.at),
      ],
    );
  }

  /** Which of these (project, contact) pairs still exist, as `project:contact` keys (an event needs its contact). */
  async existingContacts(tx: Queryable, pairs: Array<{ projectId: string; contactId: string }>): Promise<Set<string>> {
    if (!pairs.length) return new Set();
    const { rows } = await tx.query<{ project_id: string; id: string }>(
      `SELECT c.project_id, c.id FROM contacts c JOIN unnest($1::uuid[], $2::uuid[]) AS x(p, k)
         ON c.project_id = x.p AND c.id = x.k`,
      [pairs.map((p) => p.projectId), pairs.map((p) => p.contactId)],
    );
    return new Set(rows.map((r) => `${r.project_id}:${r.id}`));
  }

  /** The message ids a consumer sees for the first time (redeliveries and repeats in the list are left out). */
  async markProcessedMany(tx: Queryable, consumer: string, messageIds: string[]): Promise<Set<string>> {
    if (!messageIds.length) return new Set();
    const { rows } = await tx.query<{ message_id: string }>(
      `INSERT INTO processed_messages (consumer, message_id) SELECT $1, m FROM unnest($2::text[]) AS m
       ON CONFLICT DO NOTHING RETURNING message_id`,
      [consumer, messageIds],
    );
    return new Set(rows.map((r) => r.message_id));
  }

  /** True the first time a consumer sees a message id: redeliveries are skipped. */
  async markProcessed(tx: Queryable, consumer: string, messageId: string): Promise<boolean> {
    const { rowCount } = await tx.query(
      'INSERT INTO processed_messages (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [consumer, messageId],
    );
    return rowCount === 1;
  }
}
