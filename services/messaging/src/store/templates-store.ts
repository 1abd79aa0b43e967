import type { NamedSortColumn } from '@svc/lib/pagination';
import type { Pool, Queryable } from '@svc/lib/db';

export type TemplateType = 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS';

export interface TemplateRow {
  id: string;
  project_id: string;
  name: string;
  description: string;
  subject: string;
  body: string;
  from_email: string;
  from_name: string;
  reply_to: string;
  type: TemplateType;
  created_at: Date;
  updated_at: Date;
}

export type TemplateFields = Pick<
  TemplateRow,
  'name' | 'description' | 'subject' | 'body' | 'from_email' | 'from_name' | 'reply_to' | 'type'
>;

export interface TemplateQuery {
  type?: TemplateType;
  search?: string;
  sort: NamedSortColumn;
  dir: 'asc' | 'desc';
  limit: number;
  offset: number;
}

const FIELDS = ['name', 'description', 'subject', 'body', 'from_email', 'from_name', 'reply_to', 'type'] as const;

/** PostgreSQL's lock_not_available (a NOWAIT lock held by another transaction). */
const LOCK_NOT_AVAILABLE = '55P03';

export class TemplatesStore {
  constructor(readonly pool: Pool) {}

  async insert(id: string, projectId: string, t: TemplateFields): Promise<TemplateRow> {
    const { rows } = await this.pool.query<TemplateRow>(
      `INSERT INTO templates (id, project_id, ${FIELDS.join(', ')})
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
      [id, projectId, ...FIELDS.map((f) => t[f])],
    );
    return rows[0];
  }

  async get(projectId: string, id: string): Promise<TemplateRow | null> {
    const { rows } = await this.pool.query<TemplateRow>('SELECT * FROM templates WHERE project_id = $1 AND id = $2', [
      projectId,
      id,
    ]);
    return rows[0] ?? null;
  }

  /**
   * The template, or 'deleting' at once (NOWAIT) while a DELETE of it holds the row (`lockForDelete`): the caller
   * may hold what that DELETE waits for (a workflow step being saved), so it must not wait for it. Updates take
   * FOR NO KEY UPDATE, which this lock does not wait for.
   */
  async getUnlessDeleting(projectId: string, id: string): Promise<TemplateRow | 'deleting' | null> {
    try {
      const { rows } = await this.pool.query<TemplateRow>(
        'SELECT * FROM templates WHERE project_id = $1 AND id = $2 FOR KEY SHARE NOWAIT',
        [projectId, id],
      );
      return rows[0] ?? null;
    } catch (err) {
      if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) return 'deleting';
      throw err;
    }
  }

  /** Locks the template FOR UPDATE until `tx` ends (a DELETE, from its usage check to the delete); false if none. */
  async lockForDelete(tx: Queryable, projectId: string, id: string): Promise<boolean> {
    const { rowCount } = await tx.query('SELECT 1 FROM templates WHERE project_id = $1 AND id = $2 FOR UPDATE', [
      projectId,
      id,
    ]);
    return rowCount === 1;
  }

  async update(projectId: string, id: string, patch: Partial<TemplateFields>): Promise<TemplateRow | null> {
    const keys = FIELDS.filter((f) => patch[f] !== undefined);
    const sets = keys.map((k, i) => `${k} = $${i + 3}`);
    const { rows } = await this.pool.query<TemplateRow>(
      `UPDATE templates SET ${[...sets, 'updated_at = now()'].join(', ')}
       WHERE project_id = $1 AND id = $2 RETURNING *`,
      [projectId, id, ...keys.map((k) => patch[k])],
    );
    return rows[0] ?? null;
  }

  async delete(projectId: string, id: string, db: Queryable = this.pool): Promise<boolean> {
    const { rowCount } = await db.query('DELETE FROM templates WHERE project_id = $1 AND id = $2', [projectId, id]);
    return rowCount === 1;
  }

  async page(projectId: string, q: TemplateQuery): Promise<{ rows: TemplateRow[]; total: number }> {
    const where = ['project_id = $1'];
    const params: unknown[] = [projectId];
    if (q.type) {
      params.push(q.type);
      where.push(`type = $${params.length}`);
    }
    if (q.search) {
      params.push(`%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      const p = `$${params.length}`;
      where.push(`(name ILIKE ${p} OR description ILIKE ${p} OR subject ILIKE ${p})`);
    }
    const filter = where.join(' AND ');
    const {
      rows: [{ count }],
    } = await this.pool.query<{ count: number }>(`SELECT count(*) FROM templates WHERE ${filter}`, params);
    // sort and dir are whitelisted by the caller; id breaks ties so pages never overlap.
    const { rows } = await this.pool.query<TemplateRow>(
      `SELECT * FROM templates WHERE ${filter} ORDER BY ${q.sort} ${q.dir}, id ${q.dir}
       LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, q.limit, q.offset],
    );
    return { rows, total: count };
  }
}
