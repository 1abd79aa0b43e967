import { queryWithEnds, textArray, type Pool, type Queryable, type TransactionEnds } from '@svc/lib/db';
import type { PropagatedContext } from '@svc/lib/request-context';
import type { ContactRow } from './contact-rows.js';

/** A contact a batch of tracks creates (`isNew`) or changes, in the request its message belongs to. */
export interface TrackedContactWrite {
  id: string;
  projectId: string;
  email: string;
  subscribed: boolean;
  data: object;
  isNew: boolean;
  context?: PropagatedContext;
}

/** An event a batch of tracks records, in the request its message belongs to. */
export interface TrackedEventWrite {
  id: string;
  projectId: string;
  contactId: string;
  name: string;
  data: object;
  context?: PropagatedContext;
}

/** The subjects of a batch of tracks' messages (CONTACTS_TOPICS): batches of new contacts and of events, changes. */
export interface TrackSubjects {
  createdBatch: string;
  updated: string;
  eventsBatch: string;
}

export type SortColumn = 'createdAt' | 'email';

export interface ListQuery {
  projectId: string;
  limit: number;
  search?: string;
  subscribed?: boolean;
  sort: SortColumn;
  dir: 'asc' | 'desc';
  /** Keyset position: the sort value (as text) and id of the last row of the previous page. */
  after?: { value: string; id: string };
}

const SORT_EXPR: Record<SortColumn, string> = { createdAt: 'created_at', email: 'lower(email)' };

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (m) => `\\${m}`);

export class ContactsStore {
  constructor(readonly pool: Pool) {}

  async byEmailForUpdate(tx: Queryable, projectId: string, email: string): Promise<ContactRow | null> {
    const { rows } = await tx.query<ContactRow>(
      'SELECT * FROM contacts WHERE project_id = $1 AND lower(email) = lower($2) FOR UPDATE',
      [projectId, email],
    );
    return rows[0] ?? null;
  }

  async byIdForUpdate(tx: Queryable, projectId: string, id: string): Promise<ContactRow | null> {
    const { rows } = await tx.query<ContactRow>('SELECT * FROM contacts WHERE project_id = $1 AND id = $2 FOR UPDATE', [
      projectId,
      id,
    ]);
    return rows[0] ?? null;
  }

  async byId(projectId: string, id: string): Promise<ContactRow | null> {
    const { rows } = await this.pool.query<ContactRow>('SELECT * FROM contacts WHERE project_id = $1 AND id = $2', [
      projectId,
      id,
    ]);
    return rows[0] ?? null;
  }

  /** Inserts unless the email exists (concurrent upserts): null tells the caller to re-read. */
  async insert(
    tx: Queryable,
    c: { id: string; projectId: string; email: string; subscribed: boolean; data: object },
  ): Promise<ContactRow | null> {
    const { rows } = await tx.query<ContactRow>(
      `INSERT INTO contacts (id, project_id, email, subscribed, data) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (project_id, lower(email)) DO NOTHING RETURNING *`,
      [c.id, c.projectId, c.email, c.subscribed, JSON.stringify(c.data)],
    );
    return rows[0] ?? null;
  }

  async update(
    tx: Queryable,
    projectId: string,
    id: string,
    c: { email: string; subscribed: boolean; data: object },
  ): Promise<ContactRow> {
    const { rows } = await tx.query<ContactRow>(
      `UPDATE contacts SET email = $3, subscribed = $4, data = $5, updated_at = now()
       WHERE project_id = $1 AND id = $2 RETURNING *`,
      [projectId, id, c.email, c.subscribed, JSON.stringify(c.data)],
    );
    return rows[0];
  }

  async emailTakenByOther(tx: Queryable, projectId: string, email: string, id: string): Promise<boolean> {
    const { rowCount } = await tx.query(
      'SELECT 1 FROM contacts WHERE project_id = $1 AND lower(email) = lower($2) AND id <> $3',
      [projectId, email, id],
    );
    return rowCount! > 0;
  }

  async delete(tx: Queryable, projectId: string, id: string): Promise<ContactRow | null> {
    const { rows } = await tx.query<ContactRow>('DELETE FROM contacts WHERE project_id = $1 AND id = $2 RETURNING *', [
      projectId,
      id,
    ]);
    if (rows[0]) {
      await tx.query('DELETE FROM events WHERE contact_id = $1', [id]);
      await tx.query('DELETE FROM email_activity WHERE contact_id = $1', [id]);
      await tx.query('DELETE FROM segment_members WHERE contact_id = $1', [id]);
    }
    return rows[0] ?? null;
  }

  async list(q: ListQuery): Promise<{ rows: Array<ContactRow & { sort_value: string }>; total?: number }> {
    const where = ['project_id = $1'];
    const params: unknown[] = [q.projectId];
    if (q.search) {
      params.push(`%${escapeLike(q.search.toLowerCase())}%`);
      where.push(`lower(email) LIKE $${params.length}`);
    }
    if (q.subscribed !== undefined) {
      params.push(q.subscribed);
      where.push(`subscribed = $${params.length}`);
    }
    const filterWhere = where.join(' AND ');
    const filterParams = [...params];
    const expr = SORT_EXPR[q.sort];
    const cmp = q.dir === 'desc' ? '<' : '>';
    if (q.after) {
      params.push(q.after.value, q.after.id);
      const valueCast = q.sort === 'createdAt' ? `$${params.length - 1}::timestamptz` : `$${params.length - 1}`;
      where.push(`(${expr}, id) ${cmp} (${valueCast}, $${params.length}::uuid)`);
    }
    params.push(q.limit + 1);
    const { rows } = await this.pool.query<ContactRow & { sort_value: string }>(
      `SELECT *, ${expr}::text AS sort_value FROM contacts WHERE ${where.join(' AND ')}
       ORDER BY ${expr} ${q.dir}, id ${q.dir} LIMIT $${params.length}`,
      params,
    );
    let total: number | undefined;
    if (!q.after) {
      const count = await this.pool.query<{ n: number }>(
        `SELECT count(*) AS n FROM contacts WHERE ${filterWhere}`,
        filterParams,
      );
      total = count.rows[0].n;
    }
    return { rows, total };
  }

  /** How many of these lower-case addresses are contacts of the project (billing; the project's email index). */
  async countExisting(projectId: string, emails: string[]): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM contacts WHERE project_id = $1 AND lower(email) = ANY($2::text[])',
      [projectId, emails],
    );
    return Number(rows[0].n);
  }

  /** Contacts the project holds (billing). */
  async countAll(projectId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM contacts WHERE project_id = $1', [
      projectId,
    ]);
    return Number(rows[0].n);
  }

  async byEmails(projectId: string, emails: string[]): Promise<ContactRow[]> {
    const { rows } = await this.pool.query<ContactRow>(
      'SELECT * FROM contacts WHERE project_id = $1 AND lower(email) = ANY($2::text[])',
      [projectId, emails.map((e) => e.toLowerCase())],
    );
    return rows;
  }

  /**
   * Locks the rows (FOR UPDATE, in id order) unless `read` is set. Each id probes the primary key (LATERAL): with
   * `id = ANY(...)` a planner without statistics (a table never analysed) read every contact of the project
   * through contacts_project_created for each batch.
   */
  async byIds(tx: Queryable, projectId: string, ids: string[], read = false): Promise<ContactRow[]> {
    const { rows } = await tx.query<ContactRow>(
      `SELECT c.* FROM (SELECT DISTINCT i FROM unnest($2::uuid[]) AS i ORDER BY i) AS k(id)
       CROSS JOIN LATERAL (
         SELECT * FROM contacts WHERE id = k.id AND project_id = $1 LIMIT 1${read ? '' : ' FOR UPDATE'}
       ) c`,
      [projectId, ids],
    );
    return rows;
  }

  async count(projectId: string, condition: string, params: unknown[]): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*) AS n FROM contacts c WHERE c.project_id = $1 AND ${condition}`,
      params,
    );
    return rows[0].n;
  }

  async page(condition: string, params: unknown[], limit: number, offset: number): Promise<ContactRow[]> {
    const p = [...params, limit, offset];
    const { rows } = await this.pool.query<ContactRow>(
      `SELECT c.* FROM contacts c WHERE c.project_id = $1 AND ${condition}
       ORDER BY c.created_at DESC, c.id DESC LIMIT $${p.length - 1} OFFSET $${p.length}`,
      p,
    );
    return rows;
  }

  /**
   * Matching contacts in id order after `after` (exclusive), `batch` at a time: one query per batch
   * (keyset, so it never holds a cursor open).
   */
  async *idsMatching(
    condition: string,
    params: unknown[],
    subscribedOnly: boolean,
    batch = 1000,
    after = '00000000-0000-0000-0000-000000000000',
  ): AsyncGenerator<Array<{ id: string; email: string }>> {
    yield* this.matching<{ id: string; email: string }>(
      'c.id, c.email',
      condition,
      params,
      subscribedOnly,
      batch,
      after,
    );
  }

  /** As idsMatching, with the full rows (data, subscription). */
  async *rowsMatching(
    condition: string,
    params: unknown[],
    subscribedOnly: boolean,
    batch = 1000,
    after = '00000000-0000-0000-0000-000000000000',
  ): AsyncGenerator<ContactRow[]> {
    yield* this.matching<ContactRow>('c.*', condition, params, subscribedOnly, batch, after);
  }

  private async *matching<R extends { id: string }>(
    columns: string,
    condition: string,
    params: unknown[],
    subscribedOnly: boolean,
    batch: number,
    after: string,
  ): AsyncGenerator<R[]> {
    for (;;) {
      const p = [...params, after, batch];
      const { rows } = await this.pool.query<R>(
        `SELECT ${columns} FROM contacts c WHERE c.project_id = $1 AND ${condition}
         ${subscribedOnly ? 'AND c.subscribed' : ''} AND c.id > $${p.length - 1}::uuid
         ORDER BY c.id LIMIT $${p.length}`,
        p,
      );
      if (rows.length) yield rows;
      if (rows.length < batch) return;
      after = rows[rows.length - 1].id;
    }
  }

  async deleteProject(projectId: string): Promise<void> {
    // Jobs first: a running import holds its job's row while a batch writes (JobsStore.holdImport), so deleting
    // the job waits for that batch, stops the next ones, and the contacts delete that follows sees every row.
    for (const table of [
      'import_jobs',
      'bulk_jobs',
      'contacts',
      'events',
      'email_activity',
      'segment_members',
      'segment_definitions',
      'field_types',
    ]) {
      await this.pool.query(`DELETE FROM ${table} WHERE project_id = $1`, [projectId]);
    }
  }
}

/** RFC 3339 as a proto3 Timestamp of a JS Date prints it (milliseconds, no ".000"). */
const timestampJson = (column: string) =>
  `replace(to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '.000Z', 'Z')`;

/**
 * The payload `contactCreated`/`contactUpdated` (bus-messages.ts) build from a contacts row, built
 * by PostgreSQL from the row `alias`: a set-based write then sends each contact's data once and
 * parses nothing back. contact-batches.pg.test.ts holds the two equal.
 */
export const contactChangedJson = (alias: string) =>
  `jsonb_build_object('projectId', ${alias}.project_id, 'contact', ${contactSnapshotJson(alias)})`;

/** The `contact` of contactChangedJson: an item of `contacts.created_batch`. */
const contactSnapshotJson = (alias: string) =>
  `jsonb_build_object(
     'id', ${alias}.id, 'email', ${alias}.email, 'subscribed', ${alias}.subscribed, 'data', ${alias}.data,
     'createdAt', ${timestampJson(`${alias}.created_at`)}, 'updatedAt', ${timestampJson(`${alias}.updated_at`)})`;

/**
 * The rows insertWithImported takes: an email never holds a tab or a line break (email-syntax.ts), and
 * JSON.stringify escapes both inside strings, so a line splits at its first tab.
 */
export const importLines = (rows: Array<{ email: string; json: string }>): string =>
  rows.map((r) => `${r.email}\t${r.json}`).join('\n');

/**
 * Contact ids per `contacts.imported` message: a consumer handles one message within the bus's ack wait
 * (segments re-evaluates each contact of a project that tracks segments).
 */
export const IMPORTED_PER_MESSAGE = 500;

/**
 * The payload `eventTracked` (bus-messages.ts) builds from an events row, built by PostgreSQL from the
 * row `alias` (contact-batches.pg.test.ts holds the two equal).
 */
export const eventTrackedJson = (alias: string) =>
  `jsonb_build_object('projectId', ${alias}.project_id, 'contactId', ${alias}.contact_id, 'eventId', ${alias}.id,
     'name', ${alias}.name, 'data', ${alias}.data, 'createdAt', ${timestampJson(`${alias}.created_at`)})`;

/**
 * Items per batch message of a batch of tracks (`events.tracked_batch`, `contacts.created_batch`) at most, and about
 * their bytes: a message stays far below NATS's 1 MB payload limit (an item's data is at most 64 KB, custom-data.ts,
 * so a message holds at most TRACK_BYTES_PER_MESSAGE and one item more).
 */
export const TRACK_ITEMS_PER_MESSAGE = 100;
export const TRACK_BYTES_PER_MESSAGE = 256 * 1024;

/**
 * Which batch message each item goes in (`part`, counted per project from 0), in the order given: a new part after
 * TRACK_ITEMS_PER_MESSAGE items of the project, or before an item that would take the part over
 * TRACK_BYTES_PER_MESSAGE. Reckoned here rather than by the statement (a window over every payload's text cost
 * PostgreSQL about a fifth of a track's write): `bytes` is about an item's payload size, asked only when `total`
 * (the batch's whole JSON text) is over the limit; below it, counting is enough.
 */
export function batchParts(items: Array<{ projectId: string }>, total: number, bytes: (i: number) => number): number[] {
  const byProject = new Map<string, { part: number; count: number; size: number }>();
  const sized = total > TRACK_BYTES_PER_MESSAGE;
  return items.map((item, i) => {
    const size = sized ? bytes(i) : 0;
    let p = byProject.get(item.projectId);
    if (!p) byProject.set(item.projectId, (p = { part: 0, count: 0, size: 0 }));
    else if (p.count >= TRACK_ITEMS_PER_MESSAGE || p.size + size > TRACK_BYTES_PER_MESSAGE) {
      p.part++;
      p.count = 0;
      p.size = 0;
    }
    p.count++;
    p.size += size;
    return p.part;
  });
}

/** About the bytes of an item's payload: its data's JSON text and the fields around it. */
export const payloadBytes = (data: unknown) => JSON.stringify(data).length + 400;

/**
 * The batch messages of the rows `from` (project_id, n, part, payload, request_id, traceparent): one per project and
 * `part` (batchParts), `{projectId, <field>: [payload, ..]}` in `n` order, with the ids of the first request among
 * them; each message's `n` is its first item's.
 */
export const trackBatchMessages = (from: string, field: string) =>
  `SELECT min(n) AS n,
          jsonb_build_object('projectId', project_id, '${field}', jsonb_agg(payload ORDER BY n)) AS payload,
          (array_agg(request_id ORDER BY n))[1] AS request_id, (array_agg(traceparent ORDER BY n))[1] AS traceparent
   FROM (${from}) f
   GROUP BY project_id, part`;

/** What a batch of tracks reads of a contact it locks: no timestamps, so no Date parsed per row. */
export type LockedContact = Pick<ContactRow, 'id' | 'project_id' | 'email' | 'subscribed' | 'data'>;

/** Set-based writes: CSV import batches and batches of tracks. */
export class ContactBatches {
  constructor(private readonly pool: Pool) {}

  /**
   * One index probe per email (a lateral lookup on contacts_project_email), whatever the statistics
   * say: with `= ANY(array)` a project that grows within minutes (an import) is planned as a scan of
   * all its rows, rechecking each against thousands of emails. Locks in (project, lower(email)) order.
   */
  async lockByEmails(tx: Queryable, projectId: string, emails: string[]): Promise<ContactRow[]> {
    const { rows } = await tx.query<ContactRow>(
      `SELECT c.* FROM (SELECT DISTINCT e FROM unnest($2::text[]) AS e ORDER BY e) AS k(email)
       CROSS JOIN LATERAL (
         SELECT * FROM contacts WHERE project_id = $1 AND lower(email) = k.email FOR UPDATE
       ) c`,
      [projectId, emails.map((e) => e.toLowerCase())],
    );
    return rows;
  }

  /**
   * Lock order is (project, lower(email)) everywhere, so concurrent batches cannot deadlock. The keys go as two
   * array literals (what pg sends for array parameters), which `ends.begin` writes into the statement's text.
   * Each key probes contacts_project_email (LATERAL): a join let a planner without statistics (a table never
   * analysed) hash every contact of every project, lower(email) of each, for each batch.
   */
  async lockByKeys(
    tx: Queryable,
    keys: Array<{ projectId: string; email: string }>,
    ends?: TransactionEnds,
  ): Promise<LockedContact[]> {
    return queryWithEnds<LockedContact>(
      tx,
      `SELECT c.id, c.project_id, c.email, c.subscribed, c.data
       FROM (SELECT DISTINCT p, e FROM unnest($1::uuid[], $2::text[]) AS k(p, e) ORDER BY p, e) AS k(project_id, email)
       CROSS JOIN LATERAL (
         SELECT id, project_id, email, subscribed, data FROM contacts
         WHERE project_id = k.project_id AND lower(email) = k.email FOR UPDATE
       ) c`,
      [textArray(keys.map((k) => k.projectId)), textArray(keys.map((k) => k.email.toLowerCase()))],
      ends,
    );
  }

  /**
   * New subscribed contacts and their `contacts.imported` outbox rows (up to IMPORTED_PER_MESSAGE ids
   * each) in one statement. `rowsText` is one line per contact, `<email>\t<data as JSON>`, distinct
   * emails (importLines): one text parameter, where array parameters cost an escaped literal per element,
   * and each row's JSON parsed once, as jsonb (a JSON array of rows was parsed three times). A row whose
   * email exists already (a concurrent writer) is skipped; the answer is the lower-case emails inserted.
   */
  async insertWithImported(
    tx: Queryable,
    projectId: string,
    rowsText: string,
    outbox: { subject: string; requestId: string | null; traceparent: string | null },
  ): Promise<Set<string>> {
    const { rows } = await tx.query<{ email: string }>(
      `WITH ins AS (
         INSERT INTO contacts (id, project_id, email, subscribed, data)
         SELECT gen_random_uuid(), $1::uuid, split_part(x.l, E'\t', 1), true, substr(x.l, strpos(x.l, E'\t') + 1)::jsonb
         FROM string_to_table($2, E'\n') WITH ORDINALITY AS x(l, n) ORDER BY x.n
         ON CONFLICT (project_id, lower(email)) DO NOTHING RETURNING id, lower(email) AS email
       ), numbered AS (
         SELECT id, (row_number() OVER () - 1) / ${IMPORTED_PER_MESSAGE} AS part FROM ins
       ), imported AS (
         INSERT INTO outbox (subject, payload, request_id, traceparent)
         SELECT $3, jsonb_build_object('projectId', $1::uuid, 'contactIds', jsonb_agg(id)), $4, $5
         FROM numbered GROUP BY part ORDER BY part
       )
       SELECT email FROM ins`,
      [projectId, rowsText, outbox.subject, outbox.requestId, outbox.traceparent],
    );
    return new Set(rows.map((r) => r.email));
  }

  /**
   * New contacts (each with its own subscription) and their `created` outbox rows in one statement,
   * like the import's insert: `rowsJson` is `[[email, subscribed, data], ...]` with distinct emails. A row
   * whose email exists already (a concurrent writer) is skipped and absent from the answer.
   */
  async insertReturningCreated(
    tx: Queryable,
    projectId: string,
    rowsJson: string,
    outbox: { subject: string; requestId: string | null; traceparent: string | null },
  ): Promise<ContactRow[]> {
    const { rows } = await tx.query<ContactRow>(
      `WITH input AS (
         SELECT x.r->>0 AS email, (x.r->>1)::boolean AS subscribed, (x.r->2)::jsonb AS data, x.n
         FROM json_array_elements($2::json) WITH ORDINALITY AS x(r, n)
       ), ins AS (
         INSERT INTO contacts (id, project_id, email, subscribed, data)
         SELECT gen_random_uuid(), $1, email, subscribed, data FROM input ORDER BY n
         ON CONFLICT (project_id, lower(email)) DO NOTHING RETURNING *
       ), created AS (
         INSERT INTO outbox (subject, payload, request_id, traceparent)
         SELECT $3, ${contactChangedJson('ins')}, $4, $5
         FROM ins JOIN input ON lower(input.email) = lower(ins.email) ORDER BY input.n
       )
       SELECT * FROM ins`,
      [projectId, rowsJson, outbox.subject, outbox.requestId, outbox.traceparent],
    );
    return rows;
  }

  /**
   * A batch of tracks in one statement: new contacts, changed contacts, events and every outbox row,
   * the payloads built here from the written rows (`contactChangedJson`, `eventTrackedJson`), in the
   * order given, each with its request's ids: the new contacts as `createdBatch` messages and the events as
   * `eventsBatch` messages (trackBatchMessages: one per project, many items each, as the single messages
   * carried them), each changed contact as its own `updated`; new contacts first, then changed ones, then events.
   * The batch goes as one JSON text of tuples, which PostgreSQL parses once (array parameters cost an escaped
   * literal per element). A new contact whose email exists already (a writer that did not hold the batch's
   * locks) fails the statement on the unique index, which fails the batch: the caller retries its writes one
   * by one. Answers the transaction's time, every event's `created_at`.
   */
  async writeTracks(
    tx: Queryable,
    batch: { contacts: TrackedContactWrite[]; events: TrackedEventWrite[] },
    subjects: TrackSubjects,
    ends?: TransactionEnds,
  ): Promise<Date> {
    const ctx = (c?: PropagatedContext) => [c?.requestId ?? null, c?.traceparent ?? null];
    // Each item's batch message (batchParts): counted at first; sized only for a batch whose text is over the limit.
    let contactParts: number[] = [];
    let eventParts: number[] = [];
    const text = () =>
      JSON.stringify({
        contacts: batch.contacts.map((c, i) => [
          c.id,
          c.projectId,
          c.email,
          c.subscribed,
          c.data,
          c.isNew,
          ...ctx(c.context),
          contactParts[i] ?? 0,
        ]),
        events: batch.events.map((e, i) => [
          e.id,
          e.projectId,
          e.contactId,
          e.name,
          e.data,
          ...ctx(e.context),
          eventParts[i] ?? 0,
        ]),
      });
    const parts = (total: number) => {
      const created = batch.contacts.map((c, i) => ({ c, i })).filter(({ c }) => c.isNew);
      contactParts = [];
      batchParts(
        created.map(({ c }) => c),
        total,
        (k) => payloadBytes(created[k].c.data),
      ).forEach((part, k) => {
        contactParts[created[k].i] = part;
      });
      eventParts = batchParts(batch.events, total, (i) => payloadBytes(batch.events[i].data));
    };
    parts(0);
    let tuples = text();
    if (tuples.length > TRACK_BYTES_PER_MESSAGE) {
      parts(tuples.length);
      tuples = text();
    }
    const rows = await queryWithEnds<{ at: Date }>(
      tx,
      `WITH input AS (SELECT $1::jsonb AS j),
       c AS (
         SELECT (x.r->>0)::uuid AS id, (x.r->>1)::uuid AS project_id, x.r->>2 AS email,
                (x.r->>3)::boolean AS subscribed,
                x.r->4 AS data, (x.r->>5)::boolean AS is_new, x.r->>6 AS request_id, x.r->>7 AS traceparent,
                (x.r->>8)::int AS part, x.n
         FROM input, jsonb_array_elements(input.j->'contacts') WITH ORDINALITY AS x(r, n)
       ), e AS (
         SELECT (x.r->>0)::uuid AS id, (x.r->>1)::uuid AS project_id, (x.r->>2)::uuid AS contact_id, x.r->>3 AS name,
                x.r->4 AS data, x.r->>5 AS request_id, x.r->>6 AS traceparent, (x.r->>7)::int AS part, x.n
         FROM input, jsonb_array_elements(input.j->'events') WITH ORDINALITY AS x(r, n)
       ), ins AS (
         INSERT INTO contacts (id, project_id, email, subscribed, data)
         SELECT id, project_id, email, subscribed, data FROM c WHERE is_new ORDER BY n
         RETURNING *
       ), upd AS (
         UPDATE contacts t SET subscribed = c.subscribed, data = c.data, updated_at = now()
         FROM c WHERE NOT c.is_new AND t.project_id = c.project_id AND t.id = c.id
         RETURNING t.*
       ), ev AS (
         INSERT INTO events (id, project_id, contact_id, name, data)
         SELECT id, project_id, contact_id, name, data FROM e ORDER BY n
         RETURNING *
       ), messages AS (
         INSERT INTO outbox (subject, payload, request_id, traceparent)
         SELECT subject, payload, request_id, traceparent FROM (
           SELECT 0 AS part, b.n, $2::text AS subject, b.payload, b.request_id, b.traceparent
           FROM (${trackBatchMessages(
             `SELECT ins.project_id, c.n, c.part, ${contactSnapshotJson('ins')} AS payload, c.request_id, c.traceparent
              FROM ins JOIN c ON c.id = ins.id`,
             'contacts',
           )}) b
           UNION ALL
           SELECT 1, c.n, $3::text, ${contactChangedJson('upd')}, c.request_id, c.traceparent
           FROM upd JOIN c ON c.id = upd.id
           UNION ALL
           SELECT 2, b.n, $4::text, b.payload, b.request_id, b.traceparent
           FROM (${trackBatchMessages(
             `SELECT ev.project_id, e.n, e.part, ${eventTrackedJson('ev')} AS payload, e.request_id, e.traceparent
              FROM ev JOIN e ON e.id = ev.id`,
             'events',
           )}) b
         ) m ORDER BY part, n
       )
       SELECT now() AS at`,
      [tuples, subjects.createdBatch, subjects.updated, subjects.eventsBatch],
      ends,
    );
    return rows[0].at;
  }

  async updateMany(
    tx: Queryable,
    projectId: string,
    rows: Array<{ id: string; subscribed: boolean; data: object }>,
  ): Promise<ContactRow[]> {
    if (!rows.length) return [];
    const { rows: updated } = await tx.query<ContactRow>(
      `UPDATE contacts c SET subscribed = x.subscribed, data = x.data, updated_at = now()
       FROM unnest($2::uuid[], $3::boolean[], $4::jsonb[]) AS x(id, subscribed, data)
       WHERE c.project_id = $1 AND c.id = x.id RETURNING c.*`,
      [projectId, rows.map((r) => r.id), rows.map((r) => r.subscribed), rows.map((r) => JSON.stringify(r.data))],
    );
    return updated;
  }

  get db(): Pool {
    return this.pool;
  }
}
