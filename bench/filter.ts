/**
 * Filter trees over 1,000,000 contacts: a fresh database gets the contacts service's schema
 * (its own migrations, run by lib's `migrate`), is seeded with set-based SQL (contacts with
 * nested data, 1-2 events each), analysed, and then a three-filter tree (nested data path
 * equals, `greaterThan` on a number, `within` N days on a date) is counted and its first page
 * fetched with the service's own code: `parseFilterTree` -> `compileFilter` -> ContactsStore's
 * `count` and `page` (the SQL the Count and Page RPCs run). Prints the median of several runs, the median CPU
 * of one PostgreSQL backend running the same queries without parallel workers (the figure a loaded box moves
 * least), and the top of EXPLAIN (ANALYZE, BUFFERS) for both.
 *
 * Twice: without managed filter indexes, then after saving both trees as segment definitions and running the
 * service's own reconciliation (filter-indexes.ts: an expression index per path compared by range). Last, the
 * write cost of those indexes: CPU of one backend updating `data` of BENCH_WRITE_ROWS contacts (as /v1/track with
 * new data does) inside a transaction rolled back, with and without them (median of 5); then VACUUM.
 *
 *   node --import tsx bench/filter.ts
 *   BENCH_CONTACTS=1000000 BENCH_RUNS=7 node --import tsx bench/filter.ts
 *   BENCH_KEEP_DB=1 node --import tsx bench/filter.ts            # keep the seeded database (name printed)
 *   BENCH_FILTER_DB=<name> node --import tsx bench/filter.ts     # reuse a kept database (no seeding, not dropped)
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { createPool, type Pool } from '@svc/lib/db';
import { migrate } from '@svc/lib/migrate';
import { OUTBOX_MIGRATION, OUTBOX_NOTIFY_MIGRATION } from '@svc/lib/outbox';
import { compileFilter, SqlParams, type IndexedPaths } from '../services/contacts/src/domain/filter-sql.js';
import { parseFilterTree } from '@svc/lib/filter-tree';
import { FilterIndexCatalog, reconcileFilterIndexes } from '../services/contacts/src/domain/filter-indexes.js';
import { ContactsStore } from '../services/contacts/src/store/contacts-store.js';
import { migrations } from '../services/contacts/src/store/migrations.js';
import { cpuSeconds, fmt, machine, median, onCleanup, peakRssReport, PG_SERVER, run, runPrefix } from './support.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const PAGE_SIZE = 20;
const REUSE = process.env.BENCH_FILTER_DB;
const INDEX_MAX = Number(process.env.FILTER_INDEX_MAX ?? 8);
const WRITE_ROWS = Number(process.env.BENCH_WRITE_ROWS ?? 20_000);
const WRITE_RUNS = 5;

/** The tree the issue names: a nested data path, a number comparison, a date window. */
const threeFilterTree = (seatsAbove: number, loginWithinDays: number) => ({
  logic: 'AND',
  groups: [
    {
      filters: [
        { field: 'data.profile.tier', operator: 'equals', value: 'gold' },
        { field: 'data.seats', operator: 'greaterThan', value: seatsAbove },
        { field: 'data.lastLogin', operator: 'within', value: loginWithinDays, unit: 'days' },
      ],
    },
  ],
});
/** ~4% match... */
const TYPICAL = threeFilterTree(50, 30);
/** ...and the same shape made selective (~0.005% match), where the first page is hardest to find. */
const SELECTIVE = threeFilterTree(98, 1);
const TREES: Array<{ name: string; tree: unknown }> = [
  { name: 'typical tree', tree: TYPICAL },
  { name: 'selective tree', tree: SELECTIVE },
];

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const secs = (t0: number) => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

/**
 * Seeds one project. Indexes are dropped first and rebuilt afterwards from their own definitions
 * (pg_indexes), which is much faster than maintaining them row by row and ends in the same schema.
 */
async function seed(pool: Pool, projectId: string): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query("SET synchronous_commit = off; SET maintenance_work_mem = '512MB'");
    const { rows: indexes } = await c.query<{ indexname: string; indexdef: string }>(
      `SELECT i.indexname, i.indexdef FROM pg_indexes i
       WHERE i.schemaname = 'public' AND i.tablename IN ('contacts', 'events')
         AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conname = i.indexname)`,
    );
    for (const i of indexes) await c.query(`DROP INDEX ${i.indexname}`);

    let t0 = performance.now();
    // Deterministic spread: tier gold ~1 in 4, seats 1..100, lastLogin over the last 90 days as a
    // full ISO 8601 UTC date-time (what `within` reads), created_at over the last year.
    await c.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'user' || g || '@bench.example.com', g % 10 <> 0,
              jsonb_build_object(
                'profile', jsonb_build_object(
                  'tier', (ARRAY['bronze', 'silver', 'gold', 'platinum'])[1 + (hashint4(g) & 3)],
                  'country', (ARRAY['FR', 'DE', 'US', 'GB', 'JP', 'BR', 'IN', 'NG'])[1 + ((hashint4(g) >> 2) & 7)]),
                'seats', 1 + ((hashint4(g) >> 5) & 1023) % 100,
                'plan', (ARRAY['free', 'starter', 'pro', 'team', 'enterprise'])[1 + ((hashint4(g) >> 15) & 1023) % 5],
                'lastLogin', to_char((now() - make_interval(secs => ((hashint4(g * 7) & 2147483647) % (90 * 86400))))
                                     AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
              now() - make_interval(secs => g % (365 * 86400)),
              now() - make_interval(secs => g % (30 * 86400))
       FROM generate_series(1, $2::int) g`,
      [projectId, CONTACTS],
    );
    console.log(`  ${fmt(CONTACTS)} contacts inserted in ${secs(t0)}`);

    t0 = performance.now();
    await c.query(
      `INSERT INTO events (id, project_id, contact_id, name, data, created_at)
       SELECT gen_random_uuid(), c.project_id, c.id,
              (ARRAY['page.viewed', 'signup', 'purchase', 'login'])[1 + (abs(hashtext(c.id::text || n)) % 4)],
              '{}'::jsonb, now() - make_interval(secs => abs(hashtext(c.email || n)) % (90 * 86400))
       FROM contacts c CROSS JOIN LATERAL generate_series(1, 1 + (abs(hashtext(c.email)) % 2)) n`,
    );
    const { rows: ev } = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM events');
    console.log(`  ${fmt(ev[0].n)} events inserted in ${secs(t0)}`);

    t0 = performance.now();
    for (const i of indexes) await c.query(i.indexdef);
    console.log(`  ${indexes.length} indexes rebuilt (${indexes.map((i) => i.indexname).join(', ')}) in ${secs(t0)}`);
    t0 = performance.now();
    await c.query('VACUUM (ANALYZE) contacts');
    await c.query('VACUUM (ANALYZE) events');
    console.log(`  VACUUM ANALYZE in ${secs(t0)}`);
  } finally {
    c.release();
  }
}

/** A Pool stand-in that records the SQL the store sends, so EXPLAIN runs the very same text. */
function recording(pool: Pool): { pool: Pool; last: () => { text: string; values: unknown[] } } {
  let last = { text: '', values: [] as unknown[] };
  const proxy = {
    query: (text: string, values: unknown[]) => {
      last = { text, values };
      return pool.query(text, values);
    },
  };
  return { pool: proxy as unknown as Pool, last: () => last };
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

/** The top plan node and the lines that say which index served, plus timings. */
async function explain(pool: Pool, text: string, values: unknown[]): Promise<string[]> {
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
  const lines = rows.map((r) => r['QUERY PLAN']);
  const keep = lines.filter(
    (l, i) =>
      i === 0 ||
      /Index|Bitmap|Seq Scan|Parallel|Workers|Rows Removed|Buffers: shared|Sort Method/.test(l) ||
      /Execution Time|Planning Time|JIT|Timing:/.test(l),
  );
  // Buffers lines repeat under every node: keep the first (top node, whole query) only.
  let buffers = 0;
  return keep.filter((l) => !(/^\s*Buffers:/.test(l) && buffers++ > 0)).map((l) => `    ${l}`);
}

interface Measure {
  count: number;
  countMs: number;
  pageMs: number;
  /** Median CPU ms of one backend with max_parallel_workers_per_gather = 0 (10 ms resolution). */
  countCpuMs: number;
  pageCpuMs: number;
  pageRows: number;
  countPlan: string[];
  pagePlan: string[];
}

/** As the service compiles (audiences.ts): with the managed indexes its catalog (FilterIndexCatalog) lists. */
function compiler(projectId: string, tree: unknown, indexed: IndexedPaths) {
  return () => {
    const parsed = parseFilterTree(tree, 'condition');
    const params = new SqlParams([projectId], new Map(), indexed);
    const sql = compileFilter(parsed, params, 'c');
    return { sql, params: params.values };
  };
}

/** Median CPU ms of one backend (from /proc: a server on this machine) for count and page, without parallel workers. */
async function serialCpu(
  dbName: string,
  projectId: string,
  tree: unknown,
  indexed: IndexedPaths,
): Promise<{ count: number; page: number }> {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/${dbName}` });
  await client.connect();
  try {
    await client.query('SET max_parallel_workers_per_gather = 0');
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const pid = rows[0].pid;
    const store = new ContactsStore(client as unknown as Pool);
    const compile = compiler(projectId, tree, indexed);
    const cpuMs = async (fn: () => Promise<unknown>) => {
      const c0 = cpuSeconds(pid);
      await fn();
      return (cpuSeconds(pid) - c0) * 1000;
    };
    const counts: number[] = [];
    const pages: number[] = [];
    for (let i = 0; i <= RUNS; i++) {
      const q = compile();
      const c = await cpuMs(() => store.count(projectId, q.sql, q.params));
      const p = await cpuMs(() => store.page(q.sql, q.params, PAGE_SIZE, 0));
      if (i === 0) continue; // warm-up
      counts.push(c);
      pages.push(p);
    }
    return { count: median(counts), page: median(pages) };
  } finally {
    await client.end();
  }
}

async function measure(pool: Pool, dbName: string, projectId: string, tree: unknown): Promise<Measure> {
  const rec = recording(pool);
  const store = new ContactsStore(rec.pool);
  const indexed = await new FilterIndexCatalog(pool).indexed();
  const compile = compiler(projectId, tree, indexed);
  // One warm-up of each (plans, caches), then RUNS timed runs; parsing and compiling are inside the timing.
  await store.count(projectId, compile().sql, compile().params);
  await store.page(compile().sql, compile().params, PAGE_SIZE, 0);
  const counts: number[] = [];
  const pages: number[] = [];
  let count = 0;
  let pageRows = 0;
  for (let i = 0; i < RUNS; i++) {
    const c = await timed(() => {
      const q = compile();
      return store.count(projectId, q.sql, q.params);
    });
    counts.push(c.ms);
    count = c.value;
    const p = await timed(() => {
      const q = compile();
      return store.page(q.sql, q.params, PAGE_SIZE, 0);
    });
    pages.push(p.ms);
    pageRows = p.value.length;
  }
  await store.count(projectId, compile().sql, compile().params);
  const countQuery = rec.last();
  await store.page(compile().sql, compile().params, PAGE_SIZE, 0);
  const pageQuery = rec.last();
  const cpu = await serialCpu(dbName, projectId, tree, indexed);
  return {
    count,
    countMs: median(counts),
    pageMs: median(pages),
    countCpuMs: cpu.count,
    pageCpuMs: cpu.page,
    pageRows,
    countPlan: await explain(pool, countQuery.text, countQuery.values),
    pagePlan: await explain(pool, pageQuery.text, pageQuery.values),
  };
}

function print(label: string, m: Measure): void {
  console.log(`\n${label}`);
  console.log(`  count: ${fmt(m.count)} matching contacts, median ${fmt(m.countMs, 1)} ms over ${RUNS} runs`);
  console.log(
    `  page (first ${PAGE_SIZE}, created_at DESC): ${m.pageRows} rows, median ${fmt(m.pageMs, 1)} ms over ${RUNS} runs`,
  );
  console.log(
    `  one backend without parallel workers, median CPU: count ${fmt(m.countCpuMs)} ms, page ${fmt(m.pageCpuMs)} ms`,
  );
  console.log('  EXPLAIN (ANALYZE, BUFFERS) count:');
  console.log(m.countPlan.join('\n'));
  console.log('  EXPLAIN (ANALYZE, BUFFERS) page:');
  console.log(m.pagePlan.join('\n'));
}

async function managedIndexes(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ d: string }>(
    "SELECT indexdef AS d FROM pg_indexes WHERE tablename = 'contacts' AND indexname LIKE 'contacts\\_range\\_%'",
  );
  return rows.map((r) => r.d.replace(/^CREATE INDEX /, ''));
}

/**
 * Median backend CPU ms of updating `data` of WRITE_ROWS contacts (a changed number and date, what a track with new
 * data writes) in a transaction rolled back (the table is unchanged; VACUUM clears the dead rows afterwards).
 */
async function writeCost(dbName: string, projectId: string): Promise<number> {
  const client = new pg.Client({ connectionString: `${PG_SERVER}/${dbName}` });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const { rows: ids } = await client.query<{ id: string }>(
      'SELECT id FROM contacts WHERE project_id = $1 ORDER BY id LIMIT $2',
      [projectId, WRITE_RUNS * WRITE_ROWS],
    );
    const runs: number[] = [];
    for (let i = 0; i < WRITE_RUNS; i++) {
      const batch = ids.slice(i * WRITE_ROWS, (i + 1) * WRITE_ROWS).map((r) => r.id);
      await client.query('BEGIN');
      const c0 = cpuSeconds(rows[0].pid);
      await client.query(
        `UPDATE contacts SET updated_at = now(),
           data = data || jsonb_build_object('seats', 1 + (hashtext(id::text) & 63), 'lastLogin',
             to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
         WHERE id = ANY($1::uuid[])`,
        [batch],
      );
      runs.push((cpuSeconds(rows[0].pid) - c0) * 1000);
      await client.query('ROLLBACK');
    }
    console.log(`  write runs, backend CPU ms: ${runs.map((r) => fmt(r)).join(', ')}`);
    return median(runs);
  } finally {
    await client.end();
  }
}

run(
  async () => {
    console.log(`machine: ${machine()}`);
    const dbName = REUSE ?? runPrefix('filter');
    let projectId: string;
    if (!REUSE) {
      await admin((c) => c.query(`CREATE DATABASE "${dbName}"`));
      if (process.env.BENCH_KEEP_DB !== '1')
        onCleanup(() =>
          admin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`)).then(() => undefined),
        );
    }
    const pool = createPool(`${PG_SERVER}/${dbName}`, 4);
    onCleanup(() => pool.end());

    if (REUSE) {
      const { rows } = await pool.query<{ project_id: string; n: number }>(
        'SELECT project_id, count(*)::int AS n FROM contacts GROUP BY 1 ORDER BY 2 DESC LIMIT 1',
      );
      projectId = rows[0].project_id;
      console.log(`reusing database ${dbName}: ${fmt(rows[0].n)} contacts in project ${projectId}`);
    } else {
      const t0 = performance.now();
      await migrate(pool, [OUTBOX_MIGRATION, OUTBOX_NOTIFY_MIGRATION, ...migrations]);
      projectId = randomUUID();
      console.log(`database ${dbName}: contacts migrations applied; seeding project ${projectId}`);
      await seed(pool, projectId);
      const kept = process.env.BENCH_KEEP_DB === '1' ? ` (kept: BENCH_FILTER_DB=${dbName} reuses it)` : '';
      console.log(`  seeded in ${secs(t0)}${kept}`);
    }
    const { rows: size } = await pool.query<{ contacts: string; events: string }>(
      "SELECT pg_size_pretty(pg_total_relation_size('contacts')) AS contacts, " +
        "pg_size_pretty(pg_total_relation_size('events')) AS events",
    );
    const { rows: settings } = await pool.query<{ s: string }>(
      "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' ORDER BY name) AS s FROM pg_settings " +
        "WHERE name IN ('shared_buffers', 'work_mem', 'jit', 'max_parallel_workers_per_gather', " +
        "'random_page_cost', 'server_version')",
    );
    console.log(
      `sizes with indexes: contacts ${size[0].contacts}, events ${size[0].events}; PostgreSQL ${settings[0].s}`,
    );
    // Managed indexes left by an interrupted run on a kept database go first: "without" means none.
    await pool.query('DELETE FROM segment_definitions WHERE project_id = $1', [projectId]);
    await reconcileFilterIndexes(pool, INDEX_MAX);
    const results: Array<{ name: string; label: string; m: Measure }> = [];
    const measureAll = async (label: string) => {
      for (const { name, tree } of TREES) {
        console.log(`\n${name} (${label}): ${JSON.stringify(tree)}`);
        const m = await measure(pool, dbName, projectId, tree);
        print(`${name}, ${label}, SQL as compiled by filter-sql.ts`, m);
        results.push({ name, label, m });
      }
    };
    await measureAll('no managed index');

    for (const { tree } of TREES)
      await pool.query('INSERT INTO segment_definitions (project_id, segment_id, condition) VALUES ($1, $2, $3)', [
        projectId,
        randomUUID(),
        JSON.stringify(tree),
      ]);
    let t0 = performance.now();
    await reconcileFilterIndexes(pool, INDEX_MAX);
    const managed = await managedIndexes(pool);
    console.log(`\nreconciled in ${secs(t0)} (FILTER_INDEX_MAX=${INDEX_MAX}, ANALYZE included): ${managed.join('; ')}`);
    await measureAll('managed indexes');

    const writes = { with: await writeCost(dbName, projectId), without: 0 };
    await pool.query('DELETE FROM segment_definitions WHERE project_id = $1', [projectId]);
    await reconcileFilterIndexes(pool, INDEX_MAX);
    writes.without = await writeCost(dbName, projectId);
    t0 = performance.now();
    await pool.query('VACUUM contacts');
    console.log(`\nmanaged indexes dropped, VACUUM contacts after the rolled-back writes in ${secs(t0)}`);

    console.log('');
    console.log(
      `load average: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}`,
    );
    for (const { name, label, m } of results) {
      console.log(
        `RESULT ${name}, ${label}, over ${fmt(CONTACTS)} contacts (${fmt(m.count)} matches): ` +
          `count ${fmt(m.countMs, 1)} ms (issue 12 aim < 200: ${m.countMs < 200 ? 'met' : 'NOT met'}), ` +
          `page ${fmt(m.pageMs, 1)} ms (aim < 20: ${m.pageMs < 20 ? 'met' : 'NOT met'}); ` +
          `serial backend CPU: count ${fmt(m.countCpuMs)} ms, page ${fmt(m.pageCpuMs)} ms`,
      );
    }
    const perContact = (ms: number) => `${fmt((ms * 1000) / WRITE_ROWS, 1)} us`;
    console.log(
      `RESULT write cost, UPDATE data of ${fmt(WRITE_ROWS)} contacts (rolled back), ` +
        `backend CPU median of ${WRITE_RUNS}: ` +
        `without managed indexes ${fmt(writes.without)} ms (${perContact(writes.without)} per contact), ` +
        `with ${managed.length} ${fmt(writes.with)} ms (${perContact(writes.with)} per contact), ` +
        `+${fmt((writes.with / writes.without - 1) * 100, 0)}%`,
    );
    // The only process of this bench: PostgreSQL is the machine's shared server.
    console.log(peakRssReport({}));
  },
  import.meta.url,
);
