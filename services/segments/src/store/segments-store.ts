import type { Pool, Queryable } from '@svc/lib/db';
import type { SegmentRow } from './segment-row.js';

export interface NewSegment {
  id: string;
  projectId: string;
  name: string;
  description: string | null;
  type: 'DYNAMIC' | 'STATIC';
  condition: unknown | null;
  trackMembership: boolean;
  slug: string;
  memberCount: number;
}

export interface SegmentPatch {
  name?: string;
  description?: string | null;
  condition?: unknown;
  trackMembership?: boolean;
}

/** PostgreSQL's lock_not_available (a NOWAIT lock held by another transaction). */
const LOCK_NOT_AVAILABLE = '55P03';

export class SegmentsStore {
  constructor(readonly pool: Pool) {}

  async list(projectId: string, db: Queryable = this.pool): Promise<SegmentRow[]> {
    const { rows } = await db.query<SegmentRow>(
      'SELECT * FROM segments WHERE project_id = $1 ORDER BY created_at DESC, id DESC',
      [projectId],
    );
    return rows;
  }

  /**
   * `lock`: 'delete' (FOR UPDATE) only for a DELETE, from its checks to the delete; writers that keep the row take
   * 'write' (FOR NO KEY UPDATE), so a lock a caller cannot take at once (`getUnlessDeleting`) means a DELETE.
   */
  async get(db: Queryable, projectId: string, id: string, lock?: 'delete' | 'write'): Promise<SegmentRow | null> {
    const mode = lock === 'delete' ? ' FOR UPDATE' : lock === 'write' ? ' FOR NO KEY UPDATE' : '';
    const { rows } = await db.query<SegmentRow>(`SELECT * FROM segments WHERE project_id = $1 AND id = $2${mode}`, [
      projectId,
      id,
    ]);
    return rows[0] ?? null;
  }

  /**
   * The segment, or 'deleting' at once (NOWAIT) while a DELETE of it holds the row: the caller may hold what that
   * DELETE waits for (a campaign send's row, a workflow write's mark), so it must not wait for it. `by` 'slug':
   * `id` is the segment's slug.
   */
  async getUnlessDeleting(
    projectId: string,
    id: string,
    by: 'id' | 'slug' = 'id',
  ): Promise<SegmentRow | 'deleting' | null> {
    try {
      const { rows } = await this.pool.query<SegmentRow>(
        `SELECT * FROM segments WHERE project_id = $1 AND ${by} = $2 FOR KEY SHARE NOWAIT`,
        [projectId, id],
      );
      return rows[0] ?? null;
    } catch (err) {
      if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) return 'deleting';
      throw err;
    }
  }

  /**
   * Which of `ids` are segments of the project. Given a transaction, it also holds them (FOR KEY SHARE) until it
   * ends: a DELETE of one of them (which locks it FOR UPDATE) waits, and sees the reference the transaction stores.
   */
  async existing(projectId: string, ids: string[], tx?: Queryable): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const { rows } = await (tx ?? this.pool).query<{ id: string }>(
      `SELECT id FROM segments WHERE project_id = $1 AND id = ANY($2::uuid[])${tx ? ' FOR KEY SHARE' : ''}`,
      [projectId, ids],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** The slugs of the project that start with `base`, to pick a free one. */
  async slugsLike(projectId: string, base: string, db: Queryable = this.pool): Promise<string[]> {
    const { rows } = await db.query<{ slug: string }>(
      `SELECT slug FROM segments WHERE project_id = $1 AND (slug = $2 OR slug LIKE $2 || '-%')`,
      [projectId, base],
    );
    return rows.map((r) => r.slug);
  }

  /** null when the slug was taken meanwhile (the caller picks another). */
  async insert(db: Queryable, s: NewSegment): Promise<SegmentRow | null> {
    const { rows } = await db.query<SegmentRow>(
      `INSERT INTO segments (id, project_id, name, description, type, condition, track_membership, slug, member_count)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (project_id, slug) DO NOTHING RETURNING *`,
      [
        s.id,
        s.projectId,
        s.name,
        s.description,
        s.type,
        s.condition === null ? null : JSON.stringify(s.condition),
        s.trackMembership,
        s.slug,
        s.memberCount,
      ],
    );
    return rows[0] ?? null;
  }

  /** null when the segment is gone (deleted meanwhile). */
  async update(db: Queryable, projectId: string, id: string, p: SegmentPatch): Promise<SegmentRow | null> {
    const { rows } = await db.query<SegmentRow>(
      `UPDATE segments SET
         name = COALESCE($3, name),
         description = CASE WHEN $4 THEN $5 ELSE description END,
         condition = COALESCE($6::jsonb, condition),
         track_membership = COALESCE($7, track_membership),
         updated_at = now()
       WHERE project_id = $1 AND id = $2 RETURNING *`,
      [
        projectId,
        id,
        p.name ?? null,
        p.description !== undefined,
        p.description ?? null,
        p.condition === undefined ? null : JSON.stringify(p.condition),
        p.trackMembership ?? null,
      ],
    );
    return rows[0] ?? null;
  }

  async setCount(db: Queryable, id: string, count: number): Promise<SegmentRow> {
    const { rows } = await db.query<SegmentRow>('UPDATE segments SET member_count = $2 WHERE id = $1 RETURNING *', [
      id,
      count,
    ]);
    return rows[0];
  }

  async addToCount(db: Queryable, id: string, delta: number): Promise<void> {
    if (delta)
      await db.query('UPDATE segments SET member_count = GREATEST(0, member_count + $2) WHERE id = $1', [id, delta]);
  }

  async remove(projectId: string, id: string, db: Queryable = this.pool): Promise<boolean> {
    const { rowCount } = await db.query('DELETE FROM segments WHERE project_id = $1 AND id = $2', [projectId, id]);
    return rowCount === 1;
  }

  async removeProject(projectId: string): Promise<void> {
    await this.pool.query('DELETE FROM segments WHERE project_id = $1', [projectId]);
  }

  /**
   * Segments whose condition has a filter whose `field` is one of `exact` or starts with `prefix` (a jsonpath over
   * the stored tree, nested groups included), newest first. A project has few segments: its index bounds the scan.
   */
  async referencing(
    projectId: string,
    ref: { exact: string[]; prefix: string | null },
  ): Promise<{ id: string; name: string }[]> {
    const { rows } = await this.pool.query<{ id: string; name: string }>(
      `SELECT id, name FROM segments
       WHERE project_id = $1 AND condition IS NOT NULL
         AND jsonb_path_exists(condition, '$.**.filters[*].field ? (@ == $exact || @ starts with $prefix)',
                               jsonb_build_object('exact', $2::text[], 'prefix', $3::text))
       ORDER BY created_at DESC, id DESC`,
      [projectId, ref.exact, ref.prefix],
    );
    return rows;
  }

  /** Whether the project has any tracked DYNAMIC segment (no lock, no transaction: the common answer is no). */
  async hasTracked(projectId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `SELECT 1 FROM segments WHERE project_id = $1 AND track_membership AND type = 'DYNAMIC' LIMIT 1`,
      [projectId],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * Whether any project tracks a segment, read under the lock that orders pausing the membership deliveries
   * against a segment's tracking starting (membership-deliveries.ts): the caller's transaction holds it.
   */
  async anyTrackedLocked(tx: Queryable): Promise<boolean> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('segments.membership_deliveries', 0))`);
    const { rowCount } = await tx.query(`SELECT 1 FROM segments WHERE track_membership AND type = 'DYNAMIC' LIMIT 1`);
    return (rowCount ?? 0) > 0;
  }

  /**
   * Tracked DYNAMIC segments of a project, locked in id order (one order for every writer: no deadlock), FOR NO KEY
   * UPDATE as `get`'s 'write'.
   */
  async trackedForUpdate(db: Queryable, projectId: string): Promise<SegmentRow[]> {
    const { rows } = await db.query<SegmentRow>(
      `SELECT * FROM segments WHERE project_id = $1 AND track_membership AND type = 'DYNAMIC' ORDER BY id
       FOR NO KEY UPDATE`,
      [projectId],
    );
    return rows;
  }
}
