import type { Pool, Queryable } from '@svc/lib/db';
import type { FieldType } from '../domain/type-inference.js';

export class FieldsStore {
  constructor(readonly pool: Pool) {}

  /** First writer wins: a type, once recorded, never changes. Answers how many paths were new. */
  async record(tx: Queryable, projectId: string, types: Array<{ path: string; type: FieldType }>): Promise<number> {
    if (!types.length) return 0;
    const { rowCount } = await tx.query(
      `INSERT INTO field_types (project_id, path, type)
       SELECT $1, p, t FROM unnest($2::text[], $3::text[]) AS x(p, t) ON CONFLICT DO NOTHING`,
      [projectId, types.map((t) => t.path), types.map((t) => t.type)],
    );
    return rowCount ?? 0;
  }

  /**
   * Serializes the creation of fields in one project until the transaction ends, so two writes
   * cannot both take the last free field. Taken only by writes that add a field (rare).
   */
  async lockFieldCreation(tx: Queryable, projectId: string): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('contacts.field_types:' || $1, 0))`, [projectId]);
  }

  async count(tx: Queryable, projectId: string): Promise<number> {
    const { rows } = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM field_types WHERE project_id = $1', [
      projectId,
    ]);
    return rows[0].n;
  }

  async types(projectId: string): Promise<Array<{ path: string; type: FieldType }>> {
    const { rows } = await this.pool.query<{ path: string; type: FieldType }>(
      'SELECT path, type FROM field_types WHERE project_id = $1 ORDER BY path',
      [projectId],
    );
    return rows;
  }

  /**
   * Contacts in the project and, per dotted path, how many have a value there. One pass over the
   * top-level keys whatever the number of fields, plus a walk under the top-level keys that hold
   * nested fields. Stored data never holds a JSON null (a null in a patch deletes the key), so a
   * key that is present is set. `a.b` counts `{a: {b}}`, not a literal "a.b" key, as filters read it.
   */
  async coverage(projectId: string, paths: string[]): Promise<{ total: number; counts: number[] }> {
    type Counted = { path: string[]; n: number };
    const total = await this.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE project_id = $1',
      [projectId],
    );
    const found = new Map<string, number>();
    const add = (rows: Counted[]) => rows.forEach((r) => found.set(JSON.stringify(r.path), r.n));
    const top = await this.pool.query<Counted>(
      `SELECT ARRAY[k] AS path, count(*)::int AS n FROM contacts c CROSS JOIN LATERAL jsonb_object_keys(c.data) k
       WHERE c.project_id = $1 GROUP BY k`,
      [projectId],
    );
    add(top.rows);
    const parents = [...new Set(paths.filter((p) => p.includes('.')).map((p) => p.split('.')[0]))];
    if (parents.length) {
      const nested = await this.pool.query<Counted>(
        `WITH RECURSIVE node(path, value) AS (
           SELECT ARRAY[k], c.data -> k FROM contacts c CROSS JOIN LATERAL unnest($2::text[]) k
           WHERE c.project_id = $1 AND jsonb_typeof(c.data -> k) = 'object'
           UNION ALL
           SELECT n.path || e.key, e.value FROM node n CROSS JOIN LATERAL jsonb_each(n.value) e
           WHERE jsonb_typeof(n.value) = 'object'
         )
         SELECT path, count(*)::int AS n FROM node
         WHERE cardinality(path) > 1 AND jsonb_typeof(value) <> 'null' GROUP BY path`,
        [projectId, parents],
      );
      add(nested.rows);
    }
    return { total: total.rows[0].n, counts: paths.map((p) => found.get(JSON.stringify(p.split('.'))) ?? 0) };
  }

  async values(projectId: string, path: string[], limit: number): Promise<Array<{ value: unknown; count: number }>> {
    const value = objectPath(path, 3);
    const { rows } = await this.pool.query<{ value: unknown; count: number }>(
      `SELECT ${value} AS value, count(*) AS count FROM contacts
       WHERE project_id = $1 AND jsonb_typeof(${value}) <> 'null'
       GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $2`,
      [projectId, limit, ...path],
    );
    return rows;
  }

  async standardValues(
    projectId: string,
    column: 'email' | 'subscribed',
    limit: number,
  ): Promise<Array<{ value: unknown; count: number }>> {
    const { rows } = await this.pool.query<{ value: unknown; count: number }>(
      `SELECT ${column} AS value, count(*) AS count FROM contacts WHERE project_id = $1
       GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $2`,
      [projectId, limit],
    );
    return rows;
  }

  /**
   * Removes the key (and everything under it) from every contact of the project. Only where the path runs through
   * objects: `#-` alone would read `list.0` as an array's first item and remove it.
   */
  async deleteField(projectId: string, path: string[]): Promise<number> {
    const { rowCount } = await this.pool.query(
      `UPDATE contacts SET data = data #- $2::text[], updated_at = now()
       WHERE project_id = $1 AND ${objectPath(path, 3)} IS NOT NULL`,
      [projectId, path, ...path],
    );
    const dotted = path.join('.');
    await this.pool.query(`DELETE FROM field_types WHERE project_id = $1 AND (path = $2 OR path LIKE $3)`, [
      projectId,
      dotted,
      `${dotted.replace(/[\\%_]/g, (m) => `\\${m}`)}.%`,
    ]);
    return rowCount ?? 0;
  }
}

/**
 * The value at a field path, reading object keys only (`data -> $3::text -> $4::text ...`, keys bound from
 * `firstParam` on): a text key never indexes an array, where `#>` reads `list.0` as the first item of `list`.
 */
function objectPath(path: string[], firstParam: number): string {
  return `data${path.map((_, i) => ` -> $${firstParam + i}::text`).join('')}`;
}
