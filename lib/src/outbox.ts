import { type Bus, BusClosed, JsonText } from './bus.js';
import { CoalescingTask } from './coalescing-task.js';
import type { DbHealth } from './db-health.js';
import { releaseAfterFailure, type Pool, type Queryable } from './db.js';
import type { Logger } from './logger.js';
import type { Migration } from './migrate.js';
import { PgListener } from './pg-listener.js';
import { outgoingContext, type PropagatedContext, type RequestContext } from './request-context.js';
import { tracedPublish } from './tracing.js';

/** Every service's migrations include this table: messages commit with the state they describe. */
export const OUTBOX_MIGRATION: Migration = {
  id: '000_outbox',
  sql: `
    CREATE TABLE outbox (
      id bigserial PRIMARY KEY,
      subject text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      published_at timestamptz
    );
    CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
  `,
};

const NOTIFY_CHANNEL = 'outbox';

/** Wakes the relay from the database itself: one notification per statement, no extra round trip. */
export const OUTBOX_NOTIFY_MIGRATION: Migration = {
  id: '000_outbox_notify',
  sql: `
    CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('outbox', '');
      RETURN NULL;
    END $$;
    CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
  `,
};

/** The request that wrote a row (null outside a request): the relay sends it as message headers. */
export const OUTBOX_CONTEXT_MIGRATION: Migration = {
  id: '000_outbox_context',
  sql: 'ALTER TABLE outbox ADD COLUMN request_id text, ADD COLUMN traceparent text;',
};

/**
 * The payload kept as the JSON text written (json, not jsonb): nothing reads it as a value, the relay publishes the
 * text. jsonb parsed it into its binary form on every insert and printed it back on every relay pass, and a delivery
 * batch's `deliveries.emails_sent` is some 50 KB. lz4 where the server has it: pglz compressed such a payload several
 * times more slowly (bench/messaging-sql.ts).
 */
export const OUTBOX_JSON_MIGRATION: Migration = {
  id: '000_outbox_payload_json',
  sql: `
    ALTER TABLE outbox ALTER COLUMN payload TYPE json USING payload::json;
    DO $$
    BEGIN
      ALTER TABLE outbox ALTER COLUMN payload SET COMPRESSION lz4;
    EXCEPTION WHEN feature_not_supported THEN
      NULL;
    END $$;
  `,
};

/** Every service's outbox migrations, in order (runtime.ts and test databases apply them). */
export const OUTBOX_MIGRATIONS: Migration[] = [
  OUTBOX_MIGRATION,
  OUTBOX_NOTIFY_MIGRATION,
  OUTBOX_CONTEXT_MIGRATION,
  OUTBOX_JSON_MIGRATION,
];

const CLEANUP_EVERY_MS = 60_000;

/**
 * Planner settings of the relay's claim (SET LOCAL, sent with its BEGIN). Every published row leaves a dead entry in
 * outbox_unpublished until a vacuum. Left to the planner, a table it has no statistics of (never analysed: a new
 * database, autovacuum off or behind) is claimed through a bitmap of every entry, then a visit of every heap page
 * they point to and a sort, each pass: a cost that grew with the rows published since the last vacuum (about 800
 * pages per pass after 10,000 sends of bench/send.ts). An index scan walks the entries in id order, stops after the
 * batch, and marks the dead ones it meets, so later passes skip them without visiting the heap.
 */
export const RELAY_PLAN_SETTINGS = 'SET LOCAL enable_bitmapscan = off';

/** The bus message id (`Nats-Msg-Id`, a consumer's `meta.id`) the relay gives an outbox row of `service`. */
export const outboxMessageId = (service: string, rowId: string): string => `${service}-${rowId}`;

/**
 * Call inside the transaction that changes the state the message describes. The row carries the
 * current request context (request id, traceparent with a new span id), picked up here.
 */
export async function enqueue(tx: Queryable, subject: string, payload: unknown): Promise<void> {
  const ctx = outgoingContext();
  await tx.query('INSERT INTO outbox (subject, payload, request_id, traceparent) VALUES ($1, $2, $3, $4)', [
    subject,
    JSON.stringify(payload),
    ctx?.requestId ?? null,
    ctx?.traceparent ?? null,
  ]);
}

/** A typed message (`busMessage(topic, init)` of lib/bus-topic.ts): publishers write through this. */
export function enqueueMessage(tx: Queryable, message: { subject: string; payload: unknown }): Promise<void> {
  return enqueue(tx, message.subject, message.payload);
}

export interface RelayOptions {
  service: string;
  pool: Pool;
  bus: Bus;
  logger: Logger;
  /** Told about database failures, so an outage is logged once, not once per pass. */
  health?: DbHealth;
  pollMs?: number;
  batchSize?: number;
  /**
   * Published rows stay this long (default 60), for refillLostStreams to send again when a broker loses a stream.
   * Ignored with keepPublished false.
   */
  retentionMinutes?: number;
  /**
   * false: a published row is deleted in the pass that published it, not marked. For a bus that cannot lose what it
   * took (embedded mode's in-process bus: its publish resolves once every subscriber handled the message), where a
   * kept row is never sent again: a delete writes no new row version and no index entry (the mark's update writes
   * both: published_at is in outbox_unpublished's predicate, so it is never a HOT update). Default true.
   */
  keepPublished?: boolean;
  /**
   * Planner settings sent with the claim's `BEGIN` (default RELAY_PLAN_SETTINGS; '' leaves the plan to the planner).
   * The index scan pays only where a pass can mark the dead entries it meets: a service whose transactions stay open
   * for long (messaging's delivery batch spans its SMTP sends) holds the horizon back, so the scan fetches the heap for
   * every dead entry, each pass, and the bitmap costs less there (measured with bench/campaign.ts).
   */
  planSettings?: string;
}

/**
 * Publishes committed outbox rows in id order with `<service>-<id>` as the message id,
 * so a row published twice (crash between publish and mark) is dropped by the bus's dedupe.
 */
export class OutboxRelay {
  private timer?: NodeJS.Timeout;
  private readonly listener: PgListener;
  private readonly pass: CoalescingTask;
  private lastCleanup = 0;

  constructor(private readonly opts: RelayOptions) {
    this.pass = new CoalescingTask(
      () => this.drain(),
      (err) => {
        // Shutdown closed the bus before this service stopped: the rows stay for the next start.
        if (err instanceof PublishFailed && err.cause instanceof BusClosed) {
          opts.logger.debug({ service: opts.service }, 'outbox relay: bus closed, rows kept for the next start');
          return;
        }
        if (!(err instanceof PublishFailed) && opts.health?.report(err)) return;
        opts.logger.warn({ err }, 'outbox relay pass failed; will retry');
      },
    );
    this.listener = new PgListener(opts.pool, NOTIFY_CHANNEL, () => this.kick(), opts.logger);
  }

  async start(): Promise<void> {
    await this.listener.start();
    this.timer = setInterval(() => this.kick(), this.opts.pollMs ?? 1000);
    this.kick();
  }

  kick(): void {
    this.pass.kick();
  }

  /** Publishes until nothing is pending; returns how many messages went out. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const sent = await this.publishBatch();
      total += sent;
      if (sent < (this.opts.batchSize ?? 500)) break;
    }
    if (this.opts.keepPublished !== false && Date.now() - this.lastCleanup > CLEANUP_EVERY_MS) {
      this.lastCleanup = Date.now();
      await this.opts.pool.query('DELETE FROM outbox WHERE published_at < now() - make_interval(mins => $1)', [
        this.opts.retentionMinutes ?? 60,
      ]);
    }
    return total;
  }

  /**
   * One pass in two round trips: `BEGIN` travels with the claim and `COMMIT` with the mark, as one simple-protocol
   * text each (a round trip is a socket write and a wake-up of both sides, a good share of the relay's CPU). Only
   * integers are written into the text: the batch size and the ids PostgreSQL gave.
   */
  private async publishBatch(): Promise<number> {
    const client = await this.opts.pool.connect();
    const bus = this.opts.bus;
    const published: string[] = [];
    const batchSize = Math.trunc(this.opts.batchSize ?? 500);
    try {
      // payload as text: published as stored, never parsed here (JsonText). `ORDER BY outbox.id`, not `id`: the bare
      // name is the output column id::text, whose order no index has. planSettings (RELAY_PLAN_SETTINGS by default):
      // the claim walks outbox_unpublished in id order and stops after the batch.
      const settings = this.opts.planSettings ?? RELAY_PLAN_SETTINGS;
      const results = (await client.query(
        `BEGIN; ${settings ? `${settings}; ` : ''}SELECT id::text, subject, payload::text AS payload, request_id,
         traceparent FROM outbox WHERE published_at IS NULL ORDER BY outbox.id LIMIT ${batchSize}
         FOR UPDATE SKIP LOCKED`,
      )) as unknown as { rows: OutboxRow[] }[];
      const claim = results[results.length - 1];
      const rows = claim.rows;
      let commit = 'COMMIT';
      try {
        // Pipelined: every publish of the batch is in flight at once (one connection keeps their
        // order); only acknowledged rows are marked, the rest go out again on the next pass.
        const results = await Promise.allSettled(
          rows.map((row) => {
            const id = outboxMessageId(this.opts.service, row.id);
            // Traces on: a producer span under the request that wrote the row, sent as the message's parent.
            return tracedPublish(this.opts.service, bus.system, { ...row, id }, (traceparent) =>
              bus.publish(row.subject, new JsonText(row.payload), id, {
                requestId: row.request_id,
                traceparent,
              }),
            );
          }),
        );
        const failed = results.findIndex((r) => r.status === 'rejected');
        for (const row of failed === -1 ? rows : rows.slice(0, failed)) published.push(row.id);
        if (failed !== -1) throw new PublishFailed((results[failed] as PromiseRejectedResult).reason);
      } finally {
        if (published.length) {
          const ids = published.join(',');
          commit =
            this.opts.keepPublished === false
              ? `DELETE FROM outbox WHERE id = ANY('{${ids}}'::bigint[]); COMMIT`
              : `UPDATE outbox SET published_at = now() WHERE id = ANY('{${ids}}'::bigint[]); COMMIT`;
        }
        await client.query(commit);
      }
    } catch (err) {
      await releaseAfterFailure(client, err);
      throw err;
    }
    client.release();
    return published.length;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.pass.stop();
    await this.listener.stop();
  }
}

interface OutboxRow {
  id: string;
  subject: string;
  /** The payload as written (json text). */
  payload: string;
  request_id: string | null;
  traceparent: string | null;
}

/** The bus refused a message (not the database): kept apart so a broker outage is not taken for a database one. */
class PublishFailed extends Error {
  constructor(cause: unknown) {
    super(`bus publish failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

export interface OutboxWrite {
  subject: string;
  payload: unknown;
  /** The request this message belongs to, when a batch mixes requests; else the current context's. */
  context?: PropagatedContext;
}

/** A message of a batch that mixes requests (a group commit's `contexts[i]`), tagged with its own request. */
export function forRequest<M extends { subject: string; payload: unknown }>(
  m: M,
  ctx: RequestContext | undefined,
): M & OutboxWrite {
  return { ...m, context: outgoingContext(ctx) };
}

/** Many messages in one statement, in the given order (imports, bulk jobs, the delivery worker). */
export async function enqueueMany(tx: Queryable, messages: OutboxWrite[]): Promise<string[]> {
  if (!messages.length) return [];
  const current = outgoingContext();
  const ctx = (m: OutboxWrite) => m.context ?? current;
  // Named: prepared once per connection, not parsed and planned for every batch.
  const { rows } = await tx.query<{ id: string }>({
    name: 'outbox-enqueue-many',
    text: `INSERT INTO outbox (subject, payload, request_id, traceparent)
     SELECT s, p::json, r, t FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
       WITH ORDINALITY AS m(s, p, r, t, n) ORDER BY n
     RETURNING id::text`,
    values: [
      messages.map((m) => m.subject),
      messages.map((m) => JSON.stringify(m.payload)),
      messages.map((m) => ctx(m)?.requestId ?? null),
      messages.map((m) => ctx(m)?.traceparent ?? null),
    ],
  });
  // The ids are drawn in insertion order (ORDER BY n): ascending, they line up with `messages`.
  return rows
    .map((r) => BigInt(r.id))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map(String);
}
