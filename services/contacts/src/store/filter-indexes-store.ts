import type { Pool, PoolClient } from '@svc/lib/db';

/** Names of the indexes the service manages on `contacts` (filter-indexes.ts); no other index starts so. */
export const MANAGED_INDEX_PREFIX = 'contacts_range_';

/** Advisory lock key: one reconciliation at a time across replicas (concurrent builds wait on each other). */
const LOCK = "hashtextextended('contacts.filter_indexes', 0)";

/** An index build on a big table runs for minutes: no statement timeout, a client-side wait of an hour. */
const BUILD_TIMEOUT_MS = 3_600_000;

export interface ManagedIndex {
  name: string;
  /** false after a failed or interrupted CREATE INDEX CONCURRENTLY: never used by the planner. */
  valid: boolean;
}

/** One session holding the reconciliation lock; `close` ends the session (and with it the lock). */
export class FilterIndexSession {
  private closed = false;

  constructor(private readonly client: PoolClient) {}

  /** The DYNAMIC conditions of every project's saved segments. */
  async conditions(): Promise<unknown[]> {
    const { rows } = await this.client.query<{ condition: unknown }>(
      'SELECT condition FROM segment_definitions WHERE condition IS NOT NULL',
    );
    return rows.map((r) => r.condition);
  }

  async managed(): Promise<ManagedIndex[]> {
    const { rows } = await this.client.query<ManagedIndex>(
      `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE i.indrelid = 'contacts'::regclass AND starts_with(c.relname, $1)`,
      [MANAGED_INDEX_PREFIX],
    );
    return rows;
  }

  /**
   * `expression` is SQL built from constants only (no parameters in DDL); `name` is one of ours. The key is the
   * expression alone, not `(project_id, expression)`: PostgreSQL does not AND two bitmap index scans whose
   * conditions overlap, so two such indexes sharing `project_id = $1` are never combined for one filter tree
   * (measured: the selective page at 51 ms with one used, 13-17 ms with both). Not partial: the planner takes no
   * statistics from a partial index's expression (selfuncs.c skips them), so a range on it would be estimated
   * at a third of the table and the index left unused.
   */
  async create(name: string, expression: string): Promise<void> {
    await this.build(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${managedName(name)} ON contacts ((${expression}))`);
  }

  /** A new expression index has no statistics until the table is analysed; the planner then guesses 1/3. */
  async analyze(): Promise<void> {
    await this.build('ANALYZE contacts');
  }

  async drop(name: string): Promise<void> {
    await this.build(`DROP INDEX CONCURRENTLY IF EXISTS ${managedName(name)}`);
  }

  private async build(sql: string): Promise<void> {
    await this.client.query({ text: sql, query_timeout: BUILD_TIMEOUT_MS } as never);
  }

  /** Ends the session even while a build runs (stop does not wait for it; PostgreSQL leaves it invalid). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.release(true);
  }
}

/** Opens a session for one reconciliation: null when another replica holds the lock. */
export async function openFilterIndexSession(pool: Pool): Promise<FilterIndexSession | null> {
  const client = await pool.connect();
  const session = new FilterIndexSession(client);
  try {
    const { rows } = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(${LOCK}) AS locked`);
    if (!rows[0].locked) {
      session.close();
      return null;
    }
    await client.query('SET statement_timeout = 0');
    return session;
  } catch (err) {
    session.close();
    throw err;
  }
}

function managedName(name: string): string {
  if (!new RegExp(`^${MANAGED_INDEX_PREFIX}[a-z0-9_]+$`).test(name) || name.length > 63)
    throw new Error(`Not a managed index name: ${name}`);
  return name;
}

/** Names of the managed indexes the planner may use (valid and ready). */
export async function validManagedIndexes(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = 'contacts'::regclass AND starts_with(c.relname, $1) AND i.indisvalid AND i.indisready`,
    [MANAGED_INDEX_PREFIX],
  );
  return rows.map((r) => r.name);
}

/** SQL literal of a text constant. */
export function textLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** SQL literal of a text[] constant, each element quoted as array_in reads it. */
export function textArrayLiteral(items: string[]): string {
  const array = `{${items.map((i) => `"${i.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`).join(',')}}`;
  return textLiteral(array);
}
