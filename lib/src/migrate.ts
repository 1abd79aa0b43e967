import type { Pool } from './db.js';

export interface Migration {
  /** Sortable and never renamed once shipped, e.g. "001_init". */
  id: string;
  sql: string;
}

/**
 * Forward-only: applies, in order, each migration not yet recorded, each in its own
 * transaction. An advisory lock keeps two replicas starting at once from racing.
 */
export async function migrate(pool: Pool, migrations: Migration[]): Promise<string[]> {
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query("SELECT pg_advisory_lock(hashtext('schema_migrations'))");
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations ' +
        '(id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await client.query<{ id: string }>('SELECT id FROM schema_migrations');
    const done = new Set(rows.map((r) => r.id));
    for (const m of [...migrations].sort((a, b) => a.id.localeCompare(b.id))) {
      if (done.has(m.id)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (id) VALUES ($1)', [m.id]);
        await client.query('COMMIT');
        applied.push(m.id);
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${m.id} failed: ${(err as Error).message}`);
      }
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock(hashtext('schema_migrations'))").catch(() => undefined);
    client.release();
  }
  return applied;
}

/** The migrations in `migrations` that the database has not applied (all of them before the first migration). */
export async function pendingMigrations(pool: Pool, migrations: Migration[]): Promise<string[]> {
  let applied: Set<string>;
  try {
    applied = new Set((await pool.query<{ id: string }>('SELECT id FROM schema_migrations')).rows.map((r) => r.id));
  } catch (err) {
    // undefined_table: nothing migrated yet.
    if ((err as { code?: string }).code !== '42P01') throw err;
    applied = new Set();
  }
  return migrations.map((m) => m.id).filter((id) => !applied.has(id));
}
