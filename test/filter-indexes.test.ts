import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';

// Paths that saved segments compare by range get an index (README "Filter indexes"): through the gateway, a saved
// segment makes the contacts service build an expression index in its own database, deleting it drops the index,
// FILTER_INDEX_MAX (8 here, the default) holds, and counts are the same with the index as without.

const contactsDb = new pg.Pool({
  connectionString: serviceDatabaseUrl('contacts', platform.env.DATABASE_URL, platform.env),
  max: 2,
});
afterAll(() => contactsDb.end());

/**
 * Managed index definitions on `contacts` that mention a data key; `built`: only those PostgreSQL has finished (a
 * CREATE INDEX CONCURRENTLY is in the catalog, invalid, from its start).
 */
async function indexesOn(key: string, built = false): Promise<string[]> {
  const { rows } = await contactsDb.query<{ indexdef: string }>(
    `SELECT pg_get_indexdef(i.indexrelid) AS indexdef FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = 'contacts'::regclass AND c.relname LIKE 'contacts\\_range\\_%' AND (i.indisvalid OR NOT $1)`,
    [built],
  );
  return rows.map((r) => r.indexdef).filter((d) => d.includes(`'{${key}}'`));
}

async function managedCount(): Promise<number> {
  const { rows } = await contactsDb.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_indexes WHERE tablename = 'contacts' AND indexname LIKE 'contacts\\_range\\_%'",
  );
  return rows[0].n;
}

const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });
const DAY = 86_400_000;

describe('filter indexes', () => {
  let t: Tenant;
  const s = (method: string, url: string, body?: unknown) => call(method, url, body, { key: t.secretKey });
  const tag = randomBytes(4).toString('hex');
  const score = `score${tag}`;
  const seen = `seen${tag}`;
  const plan = `plan${tag}`;

  beforeAll(async () => {
    t = await newTenant();
    // 40 contacts: score 0..39 (a few as text or absent), seen 0..39 days ago (a few malformed).
    for (let i = 0; i < 40; i++) {
      const data: Record<string, unknown> = {
        [score]: i % 10 === 3 ? String(i) : i,
        [seen]: i % 13 === 5 ? 'not a date' : new Date(Date.now() - i * DAY - 3600_000).toISOString(),
      };
      if (i % 17 === 0) delete data[score];
      // plan: gold or silver, a few as a number, as a longer string starting with gold, or absent.
      if (i % 11 !== 4) data[plan] = i % 9 === 2 ? 7 : i % 7 === 6 ? 'gold plus' : i % 2 ? 'gold' : 'silver';
      const res = await s('POST', '/contacts', { email: uniqueEmail(`fi${i}`), data });
      expect(res.status).toBeLessThan(300);
    }
  });

  test('a saved range filter builds its index, counts are unchanged by it, deleting the segment drops it', async () => {
    const condition = tree(
      { field: `data.${score}`, operator: 'greaterThan', value: 20 },
      { field: `data.${seen}`, operator: 'within', value: 30, unit: 'days' },
    );
    const expected = [...Array(40).keys()].filter(
      (i) => i % 10 !== 3 && i % 17 !== 0 && i > 20 && i % 13 !== 5 && i < 30,
    );
    const before = await s('POST', '/contacts/filter', { condition, limit: 100 });
    expect(before.body.total).toBe(expected.length);
    expect(await indexesOn(score)).toEqual([]);

    const created = await s('POST', '/segments', { name: `Range ${tag}`, condition });
    expect(created.status).toBe(201);
    const built = await eventually(
      async () => {
        const defs = [...(await indexesOn(score, true)), ...(await indexesOn(seen, true))];
        return defs.length === 2 ? defs : undefined;
      },
      60_000,
      'both indexes built',
    );
    expect(built.join('\n')).toContain('jsonb_typeof');
    // `within` reads an exact instant (filter-sql.ts's instant expression), not the date's text.
    expect(built.join('\n')).toMatch(/contacts_range_inst_\w+ ON .*timestamp/s);
    expect(await indexesOn(score)).toHaveLength(1); // no second, invalid build beside the valid one

    const segment = await s('GET', `/segments/${created.body.id}`);
    expect(segment.body.memberCount).toBe(expected.length);
    const after = await s('POST', '/contacts/filter', { condition, limit: 100 });
    expect(after.body.total).toBe(expected.length);
    const ids = (r: { body: { data: Array<{ id: string }> } }) => r.body.data.map((c) => c.id).sort();
    expect(ids(after)).toEqual(ids(before));

    expect((await s('DELETE', `/segments/${created.body.id}`)).status).toBe(204);
    await eventually(
      async () => ((await indexesOn(score)).length + (await indexesOn(seen)).length === 0 ? true : undefined),
      60_000,
      'indexes dropped',
    );
  });

  test('a saved string equality builds its eq index; equals and notEquals match the same contacts', async () => {
    const eqIndexes = async () => {
      const { rows } = await contactsDb.query<{ indexdef: string }>(
        `SELECT pg_get_indexdef(i.indexrelid) AS indexdef FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'contacts'::regclass AND c.relname LIKE 'contacts\\_range\\_eq\\_%' AND i.indisvalid`,
      );
      return rows.map((r) => r.indexdef).filter((d) => d.includes(`'${plan}'::text`));
    };
    const ids = async (condition: object) => {
      const res = await s('POST', '/contacts/filter', { condition, limit: 100 });
      expect(res.status).toBe(200);
      return (res.body.data as Array<{ id: string }>).map((c) => c.id).sort();
    };
    const gold = tree({ field: `data.${plan}`, operator: 'equals', value: 'gold' });
    const notGold = tree({ field: `data.${plan}`, operator: 'notEquals', value: 'gold' });
    const before = { gold: await ids(gold), notGold: await ids(notGold) };
    const expected = [...Array(40).keys()].filter((i) => i % 11 !== 4 && i % 9 !== 2 && i % 7 !== 6 && i % 2 === 1);
    expect(before.gold).toHaveLength(expected.length);
    expect(before.gold.length + before.notGold.length).toBe(40);

    const savedAt = (await contactsDb.query<{ now: Date }>('SELECT now()')).rows[0].now;
    const created = await s('POST', '/segments', { name: `Plan ${tag}`, condition: gold });
    expect(created.status).toBe(201);
    const built = await eventually(async () => ((await eqIndexes()).length ? eqIndexes() : undefined), 60_000, 'eq');
    expect(built).toHaveLength(1);
    // The compiler uses the index's form once its catalog lists the index: the reconcile pass refreshes it right
    // after the ANALYZE that follows a build, so once that ANALYZE shows, a filter compiles to the eq form.
    await eventually(
      async () => {
        const { rows } = await contactsDb.query<{ done: boolean }>(
          "SELECT coalesce(last_analyze >= $1, false) AS done FROM pg_stat_user_tables WHERE relname = 'contacts'",
          [savedAt],
        );
        return rows[0]?.done ? true : undefined;
      },
      30_000,
      'the ANALYZE after the build',
    );
    expect(await ids(gold)).toEqual(before.gold);
    expect(await ids(notGold)).toEqual(before.notGold);
    expect((await s('GET', `/segments/${created.body.id}`)).body.memberCount).toBe(expected.length);

    expect((await s('DELETE', `/segments/${created.body.id}`)).status).toBe(204);
    await eventually(async () => ((await eqIndexes()).length === 0 ? true : undefined), 60_000, 'eq index dropped');
  });

  test('at most FILTER_INDEX_MAX (8) managed indexes, the most-used paths first', async () => {
    const keys = [...Array(10).keys()].map((i) => `cap${i}${tag}`);
    const ids: string[] = [];
    // cap0 is compared by three segments, cap1..cap9 by one each: 10 paths for 8 places.
    for (const [i, key] of [keys[0], keys[0], ...keys].entries()) {
      const condition = tree({ field: `data.${key}`, operator: 'lessThan', value: i });
      const res = await s('POST', '/segments', { name: `Cap ${tag} ${i}`, condition });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    await eventually(async () => ((await indexesOn(keys[0])).length === 1 ? true : undefined), 60_000, 'cap0 built');
    // The loop settles: exactly 8 managed indexes (other tests' saved segments compete for the places too).
    await eventually(async () => ((await managedCount()) === 8 ? true : undefined), 60_000, '8 managed indexes');
    await new Promise((r) => setTimeout(r, 500));
    expect(await managedCount()).toBe(8);
    expect(await indexesOn(keys[0])).toHaveLength(1);

    for (const id of ids) expect((await s('DELETE', `/segments/${id}`)).status).toBe(204);
    await eventually(
      async () => {
        for (const key of keys) if ((await indexesOn(key)).length) return undefined;
        return true;
      },
      60_000,
      'cap indexes dropped',
    );
    expect(await managedCount()).toBeLessThanOrEqual(8);
  });
});
