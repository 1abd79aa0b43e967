import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, ensureDatabase, queryWithEnds, textArray, withTransaction } from './db.js';
import { isDependencyUnavailable } from './dependency-errors.js';
import { migrate } from './migrate.js';

const DATABASE = 'postgres://postgres@127.0.0.1:5432/postgres';
const timeouts = {
  connectTimeoutMs: 1000,
  statementTimeoutMs: 300,
  queryTimeoutMs: 200,
  idleInTransactionTimeoutMs: 1000,
};

describe('pool timeouts', () => {
  it('fails a query with no answer in time (Query read timeout) and does not reuse its stuck connection', async () => {
    // statement_timeout above query_timeout: the client gives up first, as with a frozen server.
    const pool = createPool(DATABASE, 1, { ...timeouts, statementTimeoutMs: 5000 });
    try {
      const err = await withTransaction(pool, (tx) => tx.query('SELECT pg_sleep(3)')).catch((e: unknown) => e);
      expect(err).toMatchObject({ message: 'Query read timeout' });
      expect(isDependencyUnavailable(err)).toBe(true);
      // With max 1, a reused client would answer only after the old sleep ends.
      const started = Date.now();
      await expect(pool.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      await pool.end();
    }
  });

  it('cancels a statement running past statement_timeout (57014, a dependency failure)', async () => {
    const pool = createPool(DATABASE, 1, { ...timeouts, queryTimeoutMs: 5000 });
    try {
      const err = await pool.query('SELECT pg_sleep(3)').catch((e: unknown) => e);
      expect(err).toMatchObject({ code: '57014' });
      expect(isDependencyUnavailable(err)).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it('keeps a bad statement a bad statement: a syntax error is not an outage', async () => {
    const pool = createPool(DATABASE, 1, timeouts);
    try {
      const err = await withTransaction(pool, (tx) => tx.query('SELEC 1')).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: '42601' });
      expect(isDependencyUnavailable(err)).toBe(false);
      await expect(pool.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      await pool.end();
    }
  });
});

describe('queryWithEnds', () => {
  const awkward = ["it's", 'back\\slash', "\\'", 'ünïcödé 🚀', '"quoted"', '$1', ''];

  it('writes parameters into the text as the values themselves, BEGIN and COMMIT in the same round trip', async () => {
    const pool = createPool(DATABASE, 1);
    try {
      const client = await pool.connect();
      try {
        const sql = 'SELECT $1::text AS one, $2::text[] AS many';
        const params = (v: string) => [v, textArray([v, 'x'])];
        for (const v of awkward) {
          const opened = await queryWithEnds<{ one: string; many: string[] }>(client, sql, params(v), { begin: true });
          expect(opened).toEqual([{ one: v, many: [v, 'x'] }]);
          const committed = await queryWithEnds(client, sql, params(v), { commit: true });
          expect(committed).toEqual(opened);
          // Bound parameters (no ends) read the same.
          await expect(queryWithEnds(client, sql, params(v))).resolves.toEqual(opened);
        }
        // The transaction was opened and committed: none is left open.
        await queryWithEnds(client, 'SELECT 1 AS one', [], { begin: true });
        const { rows } = await client.query<{ open: boolean }>('SELECT now() <> statement_timestamp() AS open');
        expect(rows[0].open).toBe(true);
        await queryWithEnds(client, 'SELECT 1 AS one', [], { commit: true });
        await expect(client.query('COMMIT')).resolves.toBeDefined(); // only a warning: no transaction in progress
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });
});

describe('replicas starting together (migrations.mode startup)', () => {
  const names = Array.from({ length: 5 }, () => `db_test_race_${randomBytes(5).toString('hex')}`);
  const url = (name: string) => `postgres://postgres@127.0.0.1:5432/${name}`;

  afterAll(async () => {
    const admin = new pg.Client({ connectionString: DATABASE });
    await admin.connect();
    for (const name of names) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  });

  it('each creates the missing database and migrates it: none fails, each migration is applied once', async () => {
    const migrations = [{ id: '001_things', sql: 'CREATE TABLE things (id int PRIMARY KEY)' }];
    for (const name of names) {
      // Eight replicas of one service at once: CREATE DATABASE races end in 42P04 or 23505 for all but one.
      const applied = await Promise.all(
        Array.from({ length: 8 }, async () => {
          await ensureDatabase(url(name));
          const pool = createPool(url(name), 1);
          try {
            return await migrate(pool, migrations);
          } finally {
            await pool.end();
          }
        }),
      );
      expect(applied.flat()).toEqual(['001_things']);
    }
  });
});
