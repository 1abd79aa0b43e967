import type { Pool, Queryable } from '@svc/lib/db';

export type WipeKind = 'reset' | 'delete';

export interface WipeRow {
  id: string;
  project_id: string;
  kind: WipeKind;
  requested_by: string;
  created_at: Date;
  completed_at: Date | null;
}

export interface WipeStepRow {
  service: string;
  phase: number;
  started_at: Date | null;
  done_at: Date | null;
}

export class WipesStore {
  constructor(readonly pool: Pool) {}

  /** Null when the project already has a running wipe (the partial unique index). */
  async insert(
    tx: Queryable,
    w: { id: string; projectId: string; kind: WipeKind; requestedBy: string },
    phases: readonly (readonly string[])[],
  ): Promise<WipeRow | null> {
    const { rows } = await tx.query<WipeRow>(
      `INSERT INTO project_wipes (id, project_id, kind, requested_by) VALUES ($1, $2, $3, $4)
       ON CONFLICT (project_id) WHERE completed_at IS NULL DO NOTHING RETURNING *`,
      [w.id, w.projectId, w.kind, w.requestedBy],
    );
    if (!rows[0]) return null;
    const steps = phases.flatMap((services, phase) => services.map((service) => ({ service, phase })));
    await tx.query(
      `INSERT INTO project_wipe_steps (wipe_id, service, phase, started_at)
       SELECT $1, s, p, CASE WHEN p = 0 THEN now() END FROM unnest($2::text[], $3::int[]) AS x(s, p)`,
      [w.id, steps.map((s) => s.service), steps.map((s) => s.phase)],
    );
    return rows[0];
  }

  async lock(tx: Queryable, id: string): Promise<WipeRow | null> {
    const { rows } = await tx.query<WipeRow>('SELECT * FROM project_wipes WHERE id = $1 FOR UPDATE', [id]);
    return rows[0] ?? null;
  }

  /** The latest wipe of a project; with `requestedBy`, only that user's (a deleted project's owner). */
  async latest(projectId: string, requestedBy?: string): Promise<WipeRow | null> {
    const { rows } = await this.pool.query<WipeRow>(
      `SELECT * FROM project_wipes WHERE project_id = $1 AND ($2::uuid IS NULL OR requested_by = $2)
       ORDER BY created_at DESC LIMIT 1`,
      [projectId, requestedBy ?? null],
    );
    return rows[0] ?? null;
  }

  async steps(db: Queryable, wipeId: string): Promise<WipeStepRow[]> {
    const { rows } = await db.query<WipeStepRow>(
      'SELECT service, phase, started_at, done_at FROM project_wipe_steps WHERE wipe_id = $1 ORDER BY phase, service',
      [wipeId],
    );
    return rows;
  }

  async stepPending(wipeId: string, service: string): Promise<boolean> {
    const { rows } = await this.pool.query(
      `SELECT 1 FROM project_wipe_steps
       WHERE wipe_id = $1 AND service = $2 AND started_at IS NOT NULL AND done_at IS NULL`,
      [wipeId, service],
    );
    return rows.length > 0;
  }

  /** False when the step was not running (done already, or not started). */
  async markDone(tx: Queryable, wipeId: string, service: string): Promise<boolean> {
    const { rowCount } = await tx.query(
      `UPDATE project_wipe_steps SET done_at = now()
       WHERE wipe_id = $1 AND service = $2 AND started_at IS NOT NULL AND done_at IS NULL`,
      [wipeId, service],
    );
    return (rowCount ?? 0) > 0;
  }

  async start(tx: Queryable, wipeId: string, services: string[]): Promise<void> {
    await tx.query('UPDATE project_wipe_steps SET started_at = now() WHERE wipe_id = $1 AND service = ANY($2)', [
      wipeId,
      services,
    ]);
  }

  async complete(tx: Queryable, wipeId: string): Promise<void> {
    await tx.query('UPDATE project_wipes SET completed_at = now() WHERE id = $1', [wipeId]);
  }

  /** A deleted project's last trace in identity. */
  async forgetProject(tx: Queryable, projectId: string): Promise<void> {
    await tx.query('DELETE FROM project_wipes WHERE project_id = $1', [projectId]);
  }
}
