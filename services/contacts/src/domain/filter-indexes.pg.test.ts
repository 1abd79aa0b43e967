import { createHash, randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { ContactsStore } from '../store/contacts-store.js';
import { migrations } from '../store/migrations.js';
import { FilterIndexCatalog, indexName, reconcileFilterIndexes, wantedIndexes } from './filter-indexes.js';
import { compileFilter, SqlParams, type IndexedPaths } from './filter-sql.js';
import { parseFilterTree } from '@svc/lib/filter-tree';

// The managed filter indexes against a real PostgreSQL with the service's own migrations.

let db: TestDatabase;
const PROJECT = randomUUID();

const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });
const gt = (path: string, value: number) => ({ field: `data.${path}`, operator: 'greaterThan', value });
const within = (path: string, value: number) => ({ field: `data.${path}`, operator: 'within', value, unit: 'days' });
const equals = (path: string, value: string) => ({ field: `data.${path}`, operator: 'equals', value });
const LONG = 'g'.repeat(250);

async function define(condition: unknown): Promise<string> {
  const id = randomUUID();
  await db.pool.query('INSERT INTO segment_definitions (project_id, segment_id, condition) VALUES ($1, $2, $3)', [
    PROJECT,
    id,
    JSON.stringify(condition),
  ]);
  return id;
}

async function managed(): Promise<Array<{ name: string; valid: boolean }>> {
  const { rows } = await db.pool.query<{ name: string; valid: boolean }>(
    `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relname LIKE 'contacts\\_range\\_%' ORDER BY 1`,
  );
  return rows;
}

beforeAll(async () => {
  db = await createTestDatabase('contacts_filter_indexes', migrations);
  // 600 contacts: numbers, numeric text, other types, absent keys; ISO dates, bare dates, offsets, junk; strings,
  // long strings, and other types where equality compares strings, on paths through objects and arrays.
  await db.pool.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'c' || g || '@example.com', true,
       jsonb_strip_nulls(jsonb_build_object(
         'seats', CASE g % 7 WHEN 0 THEN to_jsonb((g % 100)::text) WHEN 1 THEN 'null'::jsonb WHEN 2 THEN NULL
                  WHEN 3 THEN to_jsonb(g % 100 + 0.5) ELSE to_jsonb(g % 100) END,
         'a b', jsonb_build_object('it''s', g % 50),
         'seen', CASE g % 9 WHEN 0 THEN to_jsonb('junk'::text)
                 WHEN 1 THEN to_jsonb(to_char(now() - (g % 60) * interval '1 day', 'YYYY-MM-DD'))
                 WHEN 2 THEN to_jsonb(to_char((now() - (g % 60) * interval '1 day') AT TIME ZONE 'UTC',
                   'YYYY-MM-DD"T"HH24:MI:SS"+09:00"'))
                 ELSE to_jsonb(to_char((now() - (g % 60) * interval '1 day' + interval '1 hour') AT TIME ZONE 'UTC',
                   'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) END,
         'plan', CASE g % 8 WHEN 0 THEN to_jsonb('gold'::text) WHEN 1 THEN to_jsonb('silver'::text)
                 WHEN 2 THEN to_jsonb(5) WHEN 3 THEN '["gold"]'::jsonb WHEN 4 THEN '{"tier": "gold"}'::jsonb
                 WHEN 5 THEN NULL WHEN 6 THEN to_jsonb(repeat('g', 250 + g % 2)) ELSE 'null'::jsonb END,
         'prof', CASE g % 3 WHEN 0 THEN jsonb_build_object('tier', CASE WHEN g % 2 = 0 THEN 'gold' ELSE 'GOLD' END)
                 WHEN 1 THEN '[{"tier": "gold"}]'::jsonb ELSE '{"0": {"tier": "gold"}}'::jsonb END)),
       now() - g * interval '1 minute', now()
     FROM generate_series(1, 600) g`,
    [PROJECT],
  );
  await db.pool.query('ANALYZE contacts');
});

afterAll(() => db.drop());

const TREES = [
  tree(gt('seats', 80)),
  tree({ field: 'data.seats', operator: 'lessThanOrEqual', value: 10 }),
  tree(gt("a b.it's", 40)),
  tree(within('seen', 3)),
  tree(within('seen', 30), gt('seats', 50)),
  tree({ field: 'data.seen', operator: 'olderThan', value: 20, unit: 'days' }),
  tree(equals('plan', 'gold')),
  tree(equals('plan', LONG)),
  tree(equals('prof.tier', 'gold'), within('seen', 30), gt('seats', 20)),
  tree({ field: 'data.plan', operator: 'notEquals', value: 'gold' }),
];
/** notEquals matches most rows: no index serves it. */
const UNINDEXED = 1;

/**
 * Counts and first pages of each tree; `forced`: sequential scans off, so the managed indexes serve; `indexed`: the
 * managed indexes the compiler knows of.
 */
async function results(
  forced: boolean,
  indexed: IndexedPaths = () => false,
): Promise<Array<{ count: number; page: string[]; plan: string }>> {
  const client = await db.pool.connect();
  try {
    await client.query(`SET enable_seqscan = ${forced ? 'off' : 'on'}`);
    const store = new ContactsStore(client as never);
    const out = [];
    for (const t of TREES) {
      const params = new SqlParams([PROJECT], new Map(), indexed);
      const sql = compileFilter(parseFilterTree(t), params, 'c');
      const plan = await client.query(
        `EXPLAIN SELECT count(*) FROM contacts c WHERE c.project_id = $1 AND ${sql}`,
        params.values,
      );
      out.push({
        count: await store.count(PROJECT, sql, params.values),
        page: (await store.page(sql, params.values, 20, 0)).map((r) => r.id),
        plan: plan.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n'),
      });
    }
    return out;
  } finally {
    await client.query('RESET enable_seqscan');
    client.release();
  }
}

/** The planner's estimate of the rows of `t`'s WHERE: near the truth only with statistics of the expression. */
async function estimatedRows(t: unknown): Promise<number> {
  const params = new SqlParams([PROJECT]);
  const sql = compileFilter(parseFilterTree(t), params, 'c');
  const { rows } = await db.pool.query(
    `EXPLAIN (FORMAT JSON) SELECT 1 FROM contacts c WHERE c.project_id = $1 AND ${sql}`,
    params.values,
  );
  return rows[0]['QUERY PLAN'][0].Plan['Plan Rows'];
}

describe('filter indexes', () => {
  test('wanted: compared paths of saved conditions by use: number, instant and string equality kinds, capped', () => {
    const conditions = [
      tree(gt('seats', 1), gt('seats', 2), within('seen', 1)),
      tree(gt('seats', 3), { field: 'data.plan', operator: 'equals', value: 'pro' }),
      {
        logic: 'OR',
        groups: [{ filters: [], conditions: tree({ field: 'data.seen', operator: 'olderThan', value: 2 }) }],
      },
      tree({ field: 'data.when', operator: 'greaterThan', value: '2024-01-01' }),
      { not: 'a tree' },
    ];
    const all = wantedIndexes(conditions, 10);
    // Ties go by name: the order of equally used paths is fixed but not meaningful.
    expect(all.map((w) => [w.kind, w.path.join('.'), w.uses]).sort()).toEqual([
      ['instant', 'seen', 2],
      ['number', 'seats', 2],
      ['text', 'plan', 1],
    ]);
    expect(all.map((w) => w.name).sort()).toEqual(
      [indexName('instant', ['seen']), indexName('number', ['seats']), indexName('text', ['plan'])].sort(),
    );
    expect(wantedIndexes([...conditions, tree(gt('seats', 9))], 1).map((w) => w.kind)).toEqual(['number']);
    expect(indexName('number', ['seats'])).not.toBe(indexName('instant', ['seats']));
    expect(wantedIndexes(conditions, 0)).toEqual([]);
  });

  test('reconcile builds what saved segments use, results are the same with the indexes, then drops them', async () => {
    const without = await results(true);
    expect(without.some((r) => r.plan.includes('contacts_range_'))).toBe(false);
    const ids = [];
    for (const t of TREES) ids.push(await define(t));
    expect(await reconcileFilterIndexes(db.pool, 8)).toBe(true);
    expect((await managed()).map((i) => i.valid)).toEqual([true, true, true, true, true]);
    // The planner estimates a range on a managed expression from the index's statistics (ANALYZE after the
    // build): near the 14 true rows, not a third of the table, as without them (e.g. a partial index's).
    expect(await estimatedRows(tree(gt('seats', 95)))).toBeLessThan(60);
    const catalog = new FilterIndexCatalog(db.pool);
    const withIndexes = await results(true, await catalog.indexed());
    // Every tree's count is served by a managed index, olderThan's and equality's included; never the GIN.
    for (const r of withIndexes.slice(0, -UNINDEXED)) {
      expect(r.plan).toContain('contacts_range_');
      expect(r.plan).not.toContain('contacts_data_gin');
    }
    expect(withIndexes.map(({ count, page }) => ({ count, page }))).toEqual(
      without.map(({ count, page }) => ({ count, page })),
    );
    expect(without.every((r) => r.count > 0)).toBe(true);

    // The catalog answers from its cache until this replica's pass changes the indexes.
    expect((await catalog.indexed())('text', ['plan'])).toBe(true);
    await db.pool.query('DELETE FROM segment_definitions WHERE segment_id = ANY($1::uuid[])', [ids.slice(2)]);
    expect(await reconcileFilterIndexes(db.pool, 8, undefined, undefined, catalog)).toBe(true);
    expect((await managed()).map((i) => i.name)).toEqual([indexName('number', ['seats'])]);
    const indexed = await catalog.indexed();
    expect([indexed('text', ['plan']), indexed('instant', ['seen']), indexed('number', ['seats'])]).toEqual([
      false,
      false,
      true,
    ]);
    await db.pool.query('DELETE FROM segment_definitions WHERE project_id = $1', [PROJECT]);
    expect(await reconcileFilterIndexes(db.pool, 8)).toBe(true);
    expect(await managed()).toEqual([]);
  });

  test('the cap keeps the most-used paths; an invalid build is dropped and built again', async () => {
    await define(tree(gt('x', 1)));
    await define(tree(gt('y', 1)));
    await define(tree(gt('y', 2), within('z', 1)));
    expect(await reconcileFilterIndexes(db.pool, 2)).toBe(true);
    const names = (await managed()).map((i) => i.name).sort();
    const y = indexName('number', ['y']);
    expect(names).toContain(y);
    expect(names).toHaveLength(2);

    // A concurrent build that fails leaves an invalid index under its name: a unique one over duplicates does.
    await db.pool.query(`DROP INDEX ${y}`);
    await expect(db.pool.query(`CREATE UNIQUE INDEX CONCURRENTLY ${y} ON contacts (project_id)`)).rejects.toThrow();
    expect(await managed()).toContainEqual({ name: y, valid: false });
    expect(await reconcileFilterIndexes(db.pool, 2)).toBe(true);
    expect(await managed()).toContainEqual({ name: y, valid: true });
    await db.pool.query('DELETE FROM segment_definitions WHERE project_id = $1', [PROJECT]);
    expect(await reconcileFilterIndexes(db.pool, 2)).toBe(true);
  });

  test('an index built from an older definition of its expression is replaced by the current one', async () => {
    // What 735f1f4 named an instant index (the expression was not in the hash): a changed expression kept the name,
    // so a pass left the old index and the compiler's new expression did not match it.
    const hash = createHash('sha256')
      .update(JSON.stringify(['expression', 'instant', ['seen']]))
      .digest('hex')
      .slice(0, 20);
    const stale = `contacts_range_inst_${hash}`;
    expect(stale).not.toBe(indexName('instant', ['seen']));
    await db.pool.query(`CREATE INDEX ${stale} ON contacts ((data #>> '{seen}'::text[]))`);
    await define(tree(within('seen', 30)));
    expect(await reconcileFilterIndexes(db.pool, 8)).toBe(true);
    expect(await managed()).toEqual([{ name: indexName('instant', ['seen']), valid: true }]);
    await db.pool.query('DELETE FROM segment_definitions WHERE project_id = $1', [PROJECT]);
    expect(await reconcileFilterIndexes(db.pool, 8)).toBe(true);
    expect(await managed()).toEqual([]);
  });

  test('one reconciliation at a time: another session holding the lock makes a pass answer false', async () => {
    const other = await db.pool.connect();
    try {
      await other.query("SELECT pg_advisory_lock(hashtextextended('contacts.filter_indexes', 0))");
      expect(await reconcileFilterIndexes(db.pool, 8)).toBe(false);
      await other.query("SELECT pg_advisory_unlock(hashtextextended('contacts.filter_indexes', 0))");
      expect(await reconcileFilterIndexes(db.pool, 8)).toBe(true);
    } finally {
      other.release();
    }
  });
});
