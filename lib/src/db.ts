import pg from 'pg';

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
        if (err.code !== '42P04') throw err; // created concurrently by a sibling replica
      });
    }
  } finally {
    await client.end();
  }
}

export function createPool(databaseUrl: string, max = 10): Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max });
  pool.on('error', () => {
    /* idle client errors surface on the next query; without a listener they crash the process */
  });
  return pool;
}

export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
