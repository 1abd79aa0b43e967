import type { Pool, Queryable } from '@svc/lib/db';
import type { FieldType } from '../domain/type-inference.js';

export class FieldsStore {
  constructor(readonly pool: Pool) {}

  /** First writer wins: a type, once recorded, never changes. */
  async record(tx: Queryable, projectId: string, types: Array<{ path: string; type: FieldType }>): Promise<void> {
    if (!types.length) return;
    await tx.query(
      `INSERT INTO field_types (project_id, path, type)
       SELECT $1, p, t FROM unnest($2::text[], $3::text[]) AS x(p, t) ON CONFLICT DO NOTHING`,
      [projectId, types.map((t) => t.path), types.map((t) => t.type)],
    );
  }

  async types(projectId: string): Promise<Array<{ path: string; type: FieldType }>> {
    const { rows } = await this.pool.query<{ path: string; type: FieldType }>(
      'SELECT path, type FROM field_types WHERE project_id = $1 ORDER BY path',
      [projectId],
    );
    return rows;
  }

  /** Contacts in the project and, per path, how many have a non-null value there. */
  async coverage(projectId: string, paths: string[]): Promise<{ total: number; counts: number[] }> {
    const params: unknown[] = [projectId];
    const aggregates = paths.map((p) => {
      params.push(p.split('.'));
      return `count(*) FILTER (WHERE jsonb_typeof(data #> $${params.length}::text[]) IS DISTINCT FROM 'null' AND data #> $${params.length}::text[] IS NOT NULL)`;
    });
    const { rows } = await this.pool.query(
      `SELECT count(*) AS total${aggregates.map((a, i) => `, ${a} AS c${i}`).join('')} FROM contacts WHERE project_id = $1`,
      params,
    );
    return { total: Number(rows[0].total), counts: paths.map((_, i) => Number(rows[0][`c${i}`])) };
  }

  async values(projectId: string, path: string[], limit: number): Promise<Array<{ value: unknown; count: number }>> {
    const { rows } = await this.pool.query<{ value: unknown; count: number }>(
      `SELECT data #> $2::text[] AS value, count(*) AS count FROM contacts
       WHERE project_id = $1 AND data #> $2::text[] IS NOT NULL AND jsonb_typeof(data #> $2::text[]) <> 'null'
       GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $3`,
      [projectId, path, limit],
    );
    return rows;
  }

  async standardValues(projectId: string, column: 'email' | 'subscribed', limit: number): Promise<Array<{ value: unknown; count: number }>> {
    const { rows } = await this.pool.query<{ value: unknown; count: number }>(
      `SELECT ${column} AS value, count(*) AS count FROM contacts WHERE project_id = $1 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $2`,
      [projectId, limit],
    );
    return rows;
  }

  /** Removes the key (and everything under it) from every contact of the project. */
  async deleteField(projectId: string, path: string[]): Promise<number> {
    const { rowCount } = await this.pool.query(
      `UPDATE contacts SET data = data #- $2::text[], updated_at = now() WHERE project_id = $1 AND data #> $2::text[] IS NOT NULL`,
      [projectId, path],
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
