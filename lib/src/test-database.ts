import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, type Pool } from './db.js';
import { migrate, type Migration } from './migrate.js';
import { OUTBOX_MIGRATIONS } from './outbox.js';

const SERVER_URL = process.env.TEST_DATABASE_SERVER ?? 'postgres://postgres@127.0.0.1:5432';

export interface TestDatabase {
  pool: Pool;
  drop(): Promise<void>;
}

/**
 * For store tests against a real PostgreSQL: a throwaway database with a service's own
 * migrations (and the outbox every service has), dropped afterwards.
 */
export async function createTestDatabase(tag: string, migrations: Migration[]): Promise<TestDatabase> {
  const name = `${tag}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: `${SERVER_URL}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const pool = createPool(`${SERVER_URL}/${name}`);
  await migrate(pool, [...OUTBOX_MIGRATIONS, ...migrations]);
  return {
    pool,
    async drop() {
      await pool.end();
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.end();
    },
  };
}

/**
 * The plans of the statements `run` makes on `client`, from auto_explain as notices (with row counts, without
 * timing): for tests that a statement keeps its plan, e.g. on a table the planner has no statistics of yet.
 */
export async function explainedPlans(client: pg.ClientBase, run: () => Promise<unknown>): Promise<string[]> {
  const plans: string[] = [];
  const notice = (n: { message?: string }) => plans.push(n.message ?? '');
  client.on('notice', notice);
  await client.query(`LOAD 'auto_explain'`);
  await client.query(
    `SET auto_explain.log_min_duration = 0; SET auto_explain.log_level = notice; SET client_min_messages = notice;
     SET auto_explain.log_analyze = on; SET auto_explain.log_timing = off`,
  );
  try {
    await run();
  } finally {
    await client.query('RESET auto_explain.log_min_duration');
    client.off('notice', notice);
  }
  return plans;
}
