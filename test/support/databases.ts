import pg from 'pg';

/** The loopback PostgreSQL server the tests use (TEST_DATABASE_SERVER overrides it). */
export const TEST_DATABASE_SERVER = process.env.TEST_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';

/** Drops every database whose name starts with `prefix` (a platform's `<name>_<service>` databases included). */
export async function dropDatabases(prefix: string): Promise<void> {
  const admin = new pg.Client({ connectionString: `${TEST_DATABASE_SERVER}/postgres` });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE starts_with(datname, $1)',
      [prefix],
    );
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
