import type { Pool } from '@svc/lib/db';

/** Segment definitions and static members (the segments service's read model; see migration 003). */
export class SegmentsStore {
  constructor(private readonly pool: Pool) {}

  async define(projectId: string, segmentId: string, condition: unknown | null): Promise<void> {
    await this.pool.query(
      `INSERT INTO segment_definitions (project_id, segment_id, condition) VALUES ($1, $2, $3)
       ON CONFLICT (segment_id) DO UPDATE SET condition = EXCLUDED.condition
       WHERE segment_definitions.project_id = EXCLUDED.project_id`,
      [projectId, segmentId, condition === null ? null : JSON.stringify(condition)],
    );
  }

  async forget(projectId: string, segmentId: string): Promise<void> {
    await this.pool.query('DELETE FROM segment_definitions WHERE project_id = $1 AND segment_id = $2', [
      projectId,
      segmentId,
    ]);
    await this.pool.query('DELETE FROM segment_members WHERE project_id = $1 AND segment_id = $2', [
      projectId,
      segmentId,
    ]);
  }

  /** The stored condition of a DYNAMIC segment of the project; null for a static or unknown one. */
  async conditionOf(projectId: string, segmentId: string): Promise<unknown | null> {
    const { rows } = await this.pool.query<{ condition: unknown }>(
      'SELECT condition FROM segment_definitions WHERE project_id = $1 AND segment_id = $2',
      [projectId, segmentId],
    );
    return rows[0]?.condition ?? null;
  }

  /** Which of `segmentIds` (lower-case uuids) are segments of the project, static or dynamic. */
  async existing(projectId: string, segmentIds: string[]): Promise<Set<string>> {
    const { rows } = await this.pool.query<{ segment_id: string }>(
      'SELECT segment_id FROM segment_definitions WHERE project_id = $1 AND segment_id = ANY($2::uuid[])',
      [projectId, segmentIds],
    );
    return new Set(rows.map((r) => r.segment_id));
  }

  /** Adds contacts of the project only: an id of another project's contact adds nothing. */
  async addMembers(projectId: string, segmentId: string, contactIds: string[]): Promise<number> {
    if (!contactIds.length) return 0;
    const { rowCount } = await this.pool.query(
      `INSERT INTO segment_members (project_id, segment_id, contact_id)
       SELECT project_id, $2, id FROM contacts WHERE project_id = $1 AND id = ANY($3::uuid[])
       ON CONFLICT DO NOTHING`,
      [projectId, segmentId, contactIds],
    );
    return rowCount ?? 0;
  }

  async removeMembers(projectId: string, segmentId: string, contactIds: string[]): Promise<number> {
    if (!contactIds.length) return 0;
    const { rowCount } = await this.pool.query(
      'DELETE FROM segment_members WHERE project_id = $1 AND segment_id = $2 AND contact_id = ANY($3::uuid[])',
      [projectId, segmentId, contactIds],
    );
    return rowCount ?? 0;
  }

  /** Evaluates boolean expressions over one contact ($1 project, $2 contact); empty when it does not exist. */
  async matchOne(expressions: string[], params: unknown[]): Promise<boolean[]> {
    const columns = expressions.map((e, i) => `${e} AS m${i}`).join(', ');
    const { rows } = await this.pool.query<Record<string, boolean>>(
      `SELECT ${columns} FROM contacts c WHERE c.project_id = $1 AND c.id = $2`,
      params,
    );
    return rows[0] ? expressions.map((_, i) => rows[0][`m${i}`] === true) : [];
  }
}
