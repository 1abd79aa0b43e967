import type { Pool, Queryable } from '@svc/lib/db';

export interface SuspensionRow {
  id: string;
  project_id: string;
  metric: string;
  rate: number;
  threshold: number;
  sent: string;
  reason: string;
  suspended_at: Date;
  lifted_at: Date | null;
  lifted_by: string | null;
}

export interface NewSuspension {
  id: string;
  projectId: string;
  metric: string;
  rate: number;
  threshold: number;
  sent: number;
  reason: string;
}

const HISTORY_LIMIT = 50;

export class SuspensionsStore {
  constructor(readonly pool: Pool) {}

  /** Null when the project has an open suspension already, or no longer exists. */
  async insert(tx: Queryable, s: NewSuspension): Promise<SuspensionRow | null> {
    const { rows } = await tx.query<SuspensionRow>(
      `INSERT INTO project_suspensions (id, project_id, metric, rate, threshold, sent, reason)
       SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM projects WHERE id = $2)
       ON CONFLICT (project_id) WHERE lifted_at IS NULL DO NOTHING RETURNING *`,
      [s.id, s.projectId, s.metric, s.rate, s.threshold, s.sent, s.reason],
    );
    return rows[0] ?? null;
  }

  async open(db: Queryable, projectId: string): Promise<SuspensionRow | null> {
    const { rows } = await db.query<SuspensionRow>(
      'SELECT * FROM project_suspensions WHERE project_id = $1 AND lifted_at IS NULL',
      [projectId],
    );
    return rows[0] ?? null;
  }

  async lift(tx: Queryable, projectId: string, userId: string): Promise<SuspensionRow | null> {
    const { rows } = await tx.query<SuspensionRow>(
      `UPDATE project_suspensions SET lifted_at = now(), lifted_by = $2
       WHERE project_id = $1 AND lifted_at IS NULL RETURNING *`,
      [projectId, userId],
    );
    return rows[0] ?? null;
  }

  /** Newest first (project_suspensions_project). */
  async history(projectId: string): Promise<SuspensionRow[]> {
    const { rows } = await this.pool.query<SuspensionRow>(
      'SELECT * FROM project_suspensions WHERE project_id = $1 ORDER BY suspended_at DESC LIMIT $2',
      [projectId, HISTORY_LIMIT],
    );
    return rows;
  }

  async projectExists(projectId: string): Promise<boolean> {
    const { rows } = await this.pool.query('SELECT 1 FROM projects WHERE id = $1', [projectId]);
    return rows.length > 0;
  }
}
