import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { recordNewFields, MAX_CUSTOM_FIELDS } from '../domain/fields.js';
import { AppError } from '@svc/lib/errors';
import { FieldsStore } from './fields-store.js';

// Field coverage and the field cap against a real PostgreSQL, in a throwaway database.

const SERVER_URL = 'postgres://postgres@127.0.0.1:5432';
const DB_NAME = `contacts_fields_store_${randomBytes(6).toString('hex')}`;

const SCHEMA = `
CREATE TABLE contacts (id uuid PRIMARY KEY, project_id uuid NOT NULL, email text NOT NULL,
  data jsonb NOT NULL DEFAULT '{}');
CREATE TABLE field_types (project_id uuid NOT NULL, path text NOT NULL, type text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (project_id, path));
`;

let admin: pg.Client;
let pool: pg.Pool;
let store: FieldsStore;

beforeAll(async () => {
  admin = new pg.Client(`${SERVER_URL}/postgres`);
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB_NAME}`);
  pool = new pg.Pool({ connectionString: `${SERVER_URL}/${DB_NAME}`, max: 3 });
  pool.on('error', () => undefined); // the DROP ... WITH (FORCE) at the end ends its connections
  await pool.query(SCHEMA);
  store = new FieldsStore(pool);
});

afterAll(async () => {
  await pool?.end();
  await admin?.query(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
  await admin?.end();
});

async function contacts(project: string, datas: object[]): Promise<void> {
  await pool.query(
    `INSERT INTO contacts (id, project_id, email, data) SELECT gen_random_uuid(), $1, 'c' || i || '@example.com', d
     FROM unnest($2::jsonb[]) WITH ORDINALITY AS x(d, i)`,
    [project, datas.map((d) => JSON.stringify(d))],
  );
}

test('coverage scales past the 1,664 columns one SELECT may have (one aggregate per field failed there)', async () => {
  const project = randomUUID();
  const paths = Array.from({ length: 2000 }, (_, i) => `f${i}`);
  await pool.query(
    `INSERT INTO field_types (project_id, path, type) SELECT $1, p, 'number' FROM unnest($2::text[]) p`,
    [project, paths],
  );
  const all = Object.fromEntries(paths.map((p, i) => [p, i]));
  await contacts(project, [all, { f0: 1, f1999: 2 }, {}]);
  const { total, counts } = await store.coverage(project, paths);
  expect(total).toBe(3);
  expect(counts).toHaveLength(2000);
  expect(counts[0]).toBe(2);
  expect(counts[1]).toBe(1);
  expect(counts[1999]).toBe(2);
});

test('nested paths count contacts with a value at that path; a literal dotted key is not the nested path', async () => {
  const project = randomUUID();
  const other = randomUUID();
  await contacts(project, [
    { profile: { tier: 'gold', address: { city: 'Paris' } }, plan: 'pro' },
    { profile: { tier: 'silver' }, 'a.b': 1 },
    { profile: 'flat', a: { b: 2 } },
    { list: [{ tier: 'x' }] },
  ]);
  await contacts(other, [{ profile: { tier: 'gold' }, plan: 'pro' }]);
  const paths = ['a.b', 'list', 'plan', 'profile.address.city', 'profile.tier', 'missing', 'missing.deep'];
  const { total, counts } = await store.coverage(project, paths);
  expect(total).toBe(4);
  expect(Object.fromEntries(paths.map((p, i) => [p, counts[i]]))).toEqual({
    'a.b': 1,
    list: 1,
    plan: 1,
    'profile.address.city': 1,
    'profile.tier': 2,
    missing: 0,
    'missing.deep': 0,
  });
});

test(`the ${MAX_CUSTOM_FIELDS + 1}st field is refused and rolled back; known fields still record`, async () => {
  const project = randomUUID();
  const types = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({ path: `k${from + i}`, type: 'string' as const }));
  const inTx = async (fn: (tx: pg.PoolClient) => Promise<void>) => {
    const tx = await pool.connect();
    try {
      await tx.query('BEGIN');
      await fn(tx);
      await tx.query('COMMIT');
    } catch (err) {
      await tx.query('ROLLBACK');
      throw err;
    } finally {
      tx.release();
    }
  };
  await inTx((tx) => recordNewFields(store, tx, project, types(0, MAX_CUSTOM_FIELDS)));
  const refused = inTx((tx) => recordNewFields(store, tx, project, types(MAX_CUSTOM_FIELDS - 1, 2)));
  await expect(refused).rejects.toBeInstanceOf(AppError);
  await expect(refused).rejects.toMatchObject({ status: 422, errors: [{ code: 'too_many_fields' }] });
  await inTx((tx) => recordNewFields(store, tx, project, types(0, 3)));
  expect(await store.count(pool, project)).toBe(MAX_CUSTOM_FIELDS);
});

test('concurrent writes cannot both take the last free field', async () => {
  const project = randomUUID();
  await pool.query(
    `INSERT INTO field_types (project_id, path, type) SELECT $1, 'p' || i, 'string' FROM generate_series(1, $2) i`,
    [project, MAX_CUSTOM_FIELDS - 1],
  );
  const attempt = async (path: string) => {
    const tx = await pool.connect();
    try {
      await tx.query('BEGIN');
      await recordNewFields(store, tx, project, [{ path, type: 'string' }]);
      await new Promise((r) => setTimeout(r, 50)); // still open while the other one tries
      await tx.query('COMMIT');
      return 'ok';
    } catch {
      await tx.query('ROLLBACK');
      return 'refused';
    } finally {
      tx.release();
    }
  };
  expect((await Promise.all([attempt('x'), attempt('y')])).sort()).toEqual(['ok', 'refused']);
  expect(await store.count(pool, project)).toBe(MAX_CUSTOM_FIELDS);
});
