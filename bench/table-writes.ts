/**
 * Row and index writes of a run's databases (pg_stat_user_tables, index sizes), for benches that report where
 * PostgreSQL's time per unit goes: rows inserted, updated (HOT or not) and deleted per unit, and each index's
 * growth in bytes per unit. The statistics are flushed by backends at most once a second: read after a pause.
 */
import pg from 'pg';
import { fmt, PG_SERVER } from './support.js';

interface TableCounts {
  ins: number;
  upd: number;
  hot: number;
  del: number;
}

export interface WriteSnapshot {
  tables: Map<string, TableCounts>;
  indexBytes: Map<string, number>;
}

async function databases(admin: pg.Client, prefix: string): Promise<string[]> {
  const { rows } = await admin.query<{ datname: string }>(
    'SELECT datname FROM pg_database WHERE left(datname, length($1)) = $1 ORDER BY datname',
    [prefix],
  );
  return rows.map((r) => r.datname);
}

/** Every table's write counters and every index's size in the databases named `prefix*`. */
export async function writeSnapshot(admin: pg.Client, prefix: string): Promise<WriteSnapshot> {
  const snap: WriteSnapshot = { tables: new Map(), indexBytes: new Map() };
  for (const db of await databases(admin, prefix)) {
    const client = new pg.Client({ connectionString: `${PG_SERVER}/${db}` });
    await client.connect();
    try {
      const label = db.slice(prefix.length).replace(/^_/, '');
      const t = await client.query<{ relname: string } & Record<keyof TableCounts, string>>(
        `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del
         FROM pg_stat_user_tables`,
      );
      for (const r of t.rows)
        snap.tables.set(`${label}.${r.relname}`, { ins: +r.ins, upd: +r.upd, hot: +r.hot, del: +r.del });
      const i = await client.query<{ relname: string; indexrelname: string; bytes: string }>(
        `SELECT relname, indexrelname, pg_relation_size(indexrelid) AS bytes FROM pg_stat_user_indexes`,
      );
      for (const r of i.rows) snap.indexBytes.set(`${label}.${r.relname}.${r.indexrelname}`, +r.bytes);
    } finally {
      await client.end();
    }
  }
  return snap;
}

/** The tables written between two snapshots, per unit, most written first; then the indexes that grew. */
export function writeReport(a: WriteSnapshot, b: WriteSnapshot, units: number): string {
  const per = (n: number) => fmt(n / Math.max(units, 1), 2);
  const lines: string[] = [];
  for (const [name, after] of b.tables) {
    const before = a.tables.get(name) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
    const d = {
      ins: after.ins - before.ins,
      upd: after.upd - before.upd,
      hot: after.hot - before.hot,
      del: after.del - before.del,
    };
    if (d.ins + d.upd + d.del === 0) continue;
    lines.push(`  ${name}: insert ${per(d.ins)}, update ${per(d.upd)} (HOT ${per(d.hot)}), delete ${per(d.del)}`);
  }
  const grew = [...b.indexBytes]
    .map(([name, bytes]) => [name, bytes - (a.indexBytes.get(name) ?? 0)] as const)
    .filter(([, d]) => d > 0)
    .sort((x, y) => y[1] - x[1]);
  return [
    'rows written per unit:',
    ...lines,
    `index growth, bytes per unit: ${grew.map(([n, d]) => `${n} ${fmt(d / Math.max(units, 1))}`).join(', ')}`,
  ].join('\n');
}
