import pg from 'pg';
import { isDependencyUnavailable } from './dependency-errors.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
export type Queryable = pg.Pool | pg.PoolClient;

// Bigint counts and numerics come back as JS numbers; the platform's counts stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/**
 * Each service owns its own database. `DATABASE_URL_<SERVICE>` names it exactly; otherwise
 * the service's database is `<database of DATABASE_URL>_<service>` on the same server.
 */
export function serviceDatabaseUrl(service: string, baseUrl: string, env: Record<string, string | undefined>): string {
  const exact = env[`DATABASE_URL_${service.toUpperCase()}`];
  if (exact) return exact;
  const url = new URL(baseUrl);
  const base = decodeURIComponent(url.pathname.replace(/^\//, '')) || 'platform';
  url.pathname = `/${base}_${service}`;
  return url.toString();
}

/** Creates the database when missing (needs CREATEDB; a managed database that exists is left alone). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
        // Created concurrently by a sibling replica: 42P04 (duplicate_database) when it committed first, or 23505
        // (unique_violation on pg_database's name index) when both inserted at once.
        if (err.code !== '42P04' && err.code !== '23505') throw err;
      });
    }
  } finally {
    await client.end();
  }
}

/** Bounds on every wait for PostgreSQL, so a lost or frozen server turns into errors, not hung requests. */
export interface PoolTimeouts {
  /** Opening a connection, or waiting for a free one in the pool. */
  connectTimeoutMs: number;
  /** Server side: a statement running longer is cancelled (57014). */
  statementTimeoutMs: number;
  /** Client side: no answer in this long fails the query (a frozen server never answers). */
  queryTimeoutMs: number;
  /** Server side: a session idle inside a transaction this long is closed, releasing its locks. */
  idleInTransactionTimeoutMs: number;
}

export function createPool(databaseUrl: string, max = 10, timeouts?: PoolTimeouts): Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    // No JIT: the services run short statements, and a cost misestimated on a table without statistics yet
    // (a batch's jsonb_to_recordset rows times a per-row subquery) crossed jit_above_cost and compiled for
    // ~0.4 s per 50-execution batch of the workflow worker (bench/workflow.ts part 2).
    options: '-c jit=off',
    ...(timeouts && {
      connectionTimeoutMillis: timeouts.connectTimeoutMs,
      statement_timeout: timeouts.statementTimeoutMs,
      query_timeout: timeouts.queryTimeoutMs,
      idle_in_transaction_session_timeout: timeouts.idleInTransactionTimeoutMs,
    }),
  });
  pool.on('error', () => {
    /* idle client errors surface on the next query; without a listener they crash the process */
  });
  // A borrowed client has no pool listener: a connection lost while it is checked out would
  // otherwise be an unhandled 'error' event. The query in flight still fails with that error.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** Where a statement sits in its transaction: `BEGIN` sent with it (the first), `COMMIT` sent with it (the last). */
export interface TransactionEnds {
  begin?: boolean;
  commit?: boolean;
}

/**
 * One statement with `BEGIN` and/or `COMMIT` in the same round trip (one simple-protocol text; a round trip is a
 * socket write and a wake-up on both sides). The simple protocol takes no parameters: each `$n` is written as its
 * value quoted, so `sql` must hold `$n` only where a parameter goes. Answers the statement's rows.
 */
export async function queryWithEnds<R extends pg.QueryResultRow>(
  tx: Queryable,
  sql: string,
  params: string[],
  ends: TransactionEnds = {},
): Promise<R[]> {
  if (!ends.begin && !ends.commit) return (await tx.query<R>(sql, params)).rows;
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => quoted(params[Number(n) - 1]));
  const results = (await tx.query(
    `${ends.begin ? 'BEGIN; ' : ''}${text}${ends.commit ? '; COMMIT' : ''}`,
  )) as unknown as pg.QueryResult<R>[];
  return results[ends.begin ? 1 : 0].rows;
}

/**
 * A string constant of this text, right whatever `standard_conforming_strings` says: an escape string with every
 * quote and backslash doubled. One native replace (`pg.escapeLiteral` builds it a character at a time).
 */
const quoted = (text: string): string => `E'${text.replace(/['\\]/g, '$&$&')}'`;

/** An array literal of these strings (each quoted, `"` and `\\` escaped), as pg writes an array parameter. */
export const textArray = (values: string[]): string =>
  `{${values.map((v) => `"${v.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`;

/**
 * Gives back a client after a failed transaction: rolled back and reused when the failure was
 * the statement's, destroyed when the connection is broken or stuck in a timed-out query (a
 * ROLLBACK there would wait another timeout, and a reused client would answer the old query).
 */
export async function releaseAfterFailure(client: PoolClient, err: unknown): Promise<void> {
  if (isDependencyUnavailable(err)) {
    client.release(true);
    return;
  }
  const rollback = await client.query('ROLLBACK').then(
    () => undefined,
    (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
  );
  client.release(rollback);
}

export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let result: T;
  try {
    await client.query('BEGIN');
    result = await fn(client);
    await client.query('COMMIT');
  } catch (err) {
    await releaseAfterFailure(client, err);
    throw err;
  }
  client.release();
  return result;
}
