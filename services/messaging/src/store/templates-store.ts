import type { NamedSortColumn } from '@svc/lib/pagination';
import type { Pool } from '@svc/lib/db';

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

  async delete(projectId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM templates WHERE project_id = $1 AND id = $2', [
      projectId,
      id,
    ]);
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
