import type { NamedSortColumn } from '@svc/lib/pagination';
import type { Pool, Queryable } from '@svc/lib/db';
import type { CampaignContent, CampaignRow, CampaignStatus } from './campaign-row.js';

export interface CampaignQuery {
  status?: CampaignStatus;
  search?: string;
  sort: NamedSortColumn;
  dir: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/** The channel a statement NOTIFYs when a campaign becomes due now (the scheduler wakes at once). */
export const DUE_CHANNEL = 'campaigns_due';

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

const CONTENT_COLUMNS = [
  'name',
  'description',
  'subject',
  'body',
  'from_email',
  'from_name',
  'reply_to',
  'type',
  'audience_type',
  'segment_id',
  'audience_condition',
] as const;

const contentValues = (c: CampaignContent) =>
  CONTENT_COLUMNS.map((k) =>
    k === 'audience_condition' ? (c.audience_condition === null ? null : JSON.stringify(c.audience_condition)) : c[k],
  );

/**
 * `AND <every content column> IS NOT DISTINCT FROM <its value in c>`, parameters from `$first` on: a state move that
 * starts sending applies only to the content the domain checked (a PUT committed meanwhile makes it miss).
 */
function contentUnchanged(c: CampaignContent, first: number): { sql: string; params: unknown[] } {
  const sql = CONTENT_COLUMNS.map((k, i) =>
    k === 'audience_condition'
      ? `AND ${k} IS NOT DISTINCT FROM $${first + i}::jsonb`
      : `AND ${k} IS NOT DISTINCT FROM $${first + i}`,
  ).join(' ');
  return { sql, params: contentValues(c) };
}

/** Campaign rows: content, state moves (each conditional on the state it leaves) and analytics reads. */
export class CampaignsStore {
  constructor(readonly pool: Pool) {}

  async page(projectId: string, q: CampaignQuery): Promise<{ rows: CampaignRow[]; total: number }> {
    const params: unknown[] = [projectId];
    let where = 'project_id = $1';
    if (q.status) {
      params.push(q.status);
      where += ` AND status = $${params.length}`;
    }
    if (q.search) {
      params.push(`%${escapeLike(q.search)}%`);
      const p = `$${params.length}`;
      where += ` AND (name ILIKE ${p} OR subject ILIKE ${p} OR from_email ILIKE ${p})`;
    }
    // sort and dir come from fixed lists (domain), never from the client's text.
    const order = `${q.sort} ${q.dir}, id ${q.dir}`;
    const [rows, count] = await Promise.all([
      this.pool.query<CampaignRow>(
        `SELECT * FROM campaigns WHERE ${where} ORDER BY ${order}
         LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, q.limit, q.offset],
      ),
      this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM campaigns WHERE ${where}`, params),
    ]);
    return { rows: rows.rows, total: Number(count.rows[0].n) };
  }

  async get(db: Queryable, projectId: string, id: string): Promise<CampaignRow | null> {
    const { rows } = await db.query<CampaignRow>('SELECT * FROM campaigns WHERE project_id = $1 AND id = $2', [
      projectId,
      id,
    ]);
    return rows[0] ?? null;
  }

  async byId(id: string): Promise<CampaignRow | null> {
    const { rows } = await this.pool.query<CampaignRow>('SELECT * FROM campaigns WHERE id = $1', [id]);
    return rows[0] ?? null;
  }

  async insert(id: string, projectId: string, c: CampaignContent): Promise<CampaignRow> {
    const { rows } = await this.pool.query<CampaignRow>(
      `INSERT INTO campaigns (id, project_id, ${CONTENT_COLUMNS.join(', ')})
       VALUES ($1, $2, ${CONTENT_COLUMNS.map((_, i) => `$${i + 3}`).join(', ')}) RETURNING *`,
      [id, projectId, ...contentValues(c)],
    );
    return rows[0];
  }

  /** Replaces the content of a DRAFT campaign; null when it is not (or no longer) a draft. */
  async replaceDraft(projectId: string, id: string, c: CampaignContent): Promise<CampaignRow | null> {
    const { rows } = await this.pool.query<CampaignRow>(
      `UPDATE campaigns SET ${CONTENT_COLUMNS.map((k, i) => `${k} = $${i + 3}`).join(', ')}, updated_at = now()
       WHERE project_id = $1 AND id = $2 AND status = 'DRAFT' RETURNING *`,
      [projectId, id, ...contentValues(c)],
    );
    return rows[0] ?? null;
  }

  /** Deletes unless the campaign is SENDING (then false). */
  async removeUnlessSending(projectId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM campaigns WHERE project_id = $1 AND id = $2 AND status <> 'SENDING'`,
      [projectId, id],
    );
    return rowCount === 1;
  }

  async removeProject(projectId: string): Promise<void> {
    await this.pool.query('DELETE FROM campaigns WHERE project_id = $1', [projectId]);
  }

  /** DRAFT -> SCHEDULED at `at`; null when the campaign was not a draft with content `checked`. */
  async schedule(
    db: Queryable,
    projectId: string,
    id: string,
    at: Date,
    checked: CampaignContent,
  ): Promise<CampaignRow | null> {
    const same = contentUnchanged(checked, 4);
    const { rows } = await db.query<CampaignRow>(
      `UPDATE campaigns SET status = 'SCHEDULED', scheduled_for = $3, run_at = $3, updated_at = now()
       WHERE project_id = $1 AND id = $2 AND status = 'DRAFT' ${same.sql} RETURNING *`,
      [projectId, id, at, ...same.params],
    );
    return rows[0] ?? null;
  }

  /** DRAFT -> SENDING now, with a fresh snapshot checkpoint; null when the campaign was not a draft with `checked`. */
  async sendNow(db: Queryable, projectId: string, id: string, checked: CampaignContent): Promise<CampaignRow | null> {
    const same = contentUnchanged(checked, 3);
    const { rows } = await db.query<CampaignRow>(
      `UPDATE campaigns SET status = 'SENDING', scheduled_for = NULL, run_at = now(), sent_at = now(),
         snapshot_after = NULL, snapshot_done = false, last_error = NULL, updated_at = now(),
         handover_after = NULL, handover_queued = 0, handover_withdrawn = 0
       WHERE project_id = $1 AND id = $2 AND status = 'DRAFT' ${same.sql} RETURNING *`,
      [projectId, id, ...same.params],
    );
    return rows[0] ?? null;
  }

  /** Wakes the scheduler of every replica (after the campaign became due now). */
  async notifyDue(): Promise<void> {
    await this.pool.query(`SELECT pg_notify('${DUE_CHANNEL}', '')`);
  }

  /**
   * SCHEDULED -> DRAFT (scheduledFor cleared) or SENDING -> CANCELLED, in one statement so a
   * scheduler claiming the campaign at the same moment is serialised with it by the row lock.
   * null when the campaign was in neither state.
   */
  async cancel(projectId: string, id: string): Promise<CampaignRow | null> {
    const { rows } = await this.pool.query<CampaignRow>(
      `UPDATE campaigns SET
         status = CASE status WHEN 'SCHEDULED' THEN 'DRAFT' ELSE 'CANCELLED' END,
         scheduled_for = CASE status WHEN 'SCHEDULED' THEN NULL ELSE scheduled_for END,
         run_at = NULL, lease_until = NULL, lease_token = NULL, updated_at = now()
       WHERE project_id = $1 AND id = $2 AND status IN ('SCHEDULED', 'SENDING') RETURNING *`,
      [projectId, id],
    );
    return rows[0] ?? null;
  }

  /**
   * Campaigns of a project with an audience (for usage checks): few per project, filtered in the domain.
   * `activeOnly` (a segment DELETE asks, holding the segment) first waits for the drafts being moved to SCHEDULED or
   * SENDING: a send holds its row from the move until it commits (`Campaigns.send`), and is read once it has.
   */
  async withAudience(projectId: string, activeOnly: boolean): Promise<CampaignRow[]> {
    if (activeOnly) {
      await this.pool.query(
        `SELECT 1 FROM campaigns WHERE project_id = $1 AND audience_type <> 'ALL' AND status = 'DRAFT' FOR SHARE`,
        [projectId],
      );
    }
    const { rows } = await this.pool.query<CampaignRow>(
      `SELECT * FROM campaigns WHERE project_id = $1 AND audience_type <> 'ALL'
       ${activeOnly ? `AND status IN ('SCHEDULED', 'SENDING')` : ''} ORDER BY created_at DESC, id DESC`,
      [projectId],
    );
    return rows;
  }

  async upcoming(projectId: string, limit: number): Promise<CampaignRow[]> {
    const { rows } = await this.pool.query<CampaignRow>(
      `SELECT * FROM campaigns WHERE project_id = $1 AND status = 'SCHEDULED'
       ORDER BY scheduled_for, id LIMIT $2`,
      [projectId, limit],
    );
    return rows;
  }

  /** Campaigns that started sending, best first by a counter column (a fixed name from the domain). */
  async top(projectId: string, column: string, limit: number): Promise<CampaignRow[]> {
    const { rows } = await this.pool.query<CampaignRow>(
      `SELECT * FROM campaigns WHERE project_id = $1 AND sent_at IS NOT NULL
       ORDER BY ${column} DESC, sent_at DESC, id LIMIT $2`,
      [projectId, limit],
    );
    return rows;
  }

  /** Campaigns that started sending, newest send first. */
  async sentPage(projectId: string, limit: number, offset: number): Promise<{ rows: CampaignRow[]; total: number }> {
    const [rows, count] = await Promise.all([
      this.pool.query<CampaignRow>(
        `SELECT * FROM campaigns WHERE project_id = $1 AND sent_at IS NOT NULL
         ORDER BY sent_at DESC, id DESC LIMIT $2 OFFSET $3`,
        [projectId, limit, offset],
      ),
      this.pool.query<{ n: string }>(
        'SELECT count(*) AS n FROM campaigns WHERE project_id = $1 AND sent_at IS NOT NULL',
        [projectId],
      ),
    ]);
    return { rows: rows.rows, total: Number(count.rows[0].n) };
  }
}
