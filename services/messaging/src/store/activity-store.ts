import type { Pool, Queryable } from '@svc/lib/db';

export interface ActivityRow {
  id: string;
  source_id: string;
  project_id: string;
  type: string;
  contact_id: string | null;
  email_id: string | null;
  email: string | null;
  name: string | null;
  data: Record<string, unknown>;
  occurred_at: Date;
}

export interface ActivityQuery {
  types?: string[];
  contactId?: string;
  /** Keyset position: rows strictly older than (occurredAt, id). */
  after?: { occurredAt: Date; id: string };
  limit: number;
}

export class ActivityStore {
  constructor(readonly pool: Pool) {}

  /**
   * Rows in one statement, idempotent on source_id (a redelivered bus message adds nothing): the feed's
   * consumer batches, and a withheld email's `email.suppressed` is written with the email.
   */
  async insertMany(tx: Queryable, rows: ActivityRow[]): Promise<void> {
    if (!rows.length) return;
    // Named: prepared once per connection, not parsed and planned for every delivery batch.
    await tx.query({
      name: 'activity-insert-many',
      text: `INSERT INTO activity
         (id, source_id, project_id, type, contact_id, email_id, email, name, data, occurred_at)
       SELECT id, source_id, project_id, type, contact_id, email_id, email, name, data, occurred_at
       FROM jsonb_populate_recordset(NULL::activity, $1::jsonb) ON CONFLICT (source_id) DO NOTHING`,
      values: [JSON.stringify(rows)],
    });
  }

  private filter(
    projectId: string,
    q: Pick<ActivityQuery, 'types' | 'contactId'>,
  ): { where: string[]; params: unknown[] } {
    const where = ['project_id = $1'];
    const params: unknown[] = [projectId];
    if (q.types?.length) {
      params.push(q.types);
      where.push(`type = ANY($${params.length}::text[])`);
    }
    if (q.contactId) {
      params.push(q.contactId);
      where.push(`contact_id = $${params.length}`);
    }
    return { where, params };
  }

  /**
   * One keyset page, newest first. With `withTotal` the same statement counts every row the filter matches
   * (a window over the rows before LIMIT), so the page and its total come from one snapshot: a row written
   * between two separate reads can no longer be counted but missing from the page.
   */
  async page(
    projectId: string,
    q: ActivityQuery & { withTotal?: boolean },
  ): Promise<{ rows: ActivityRow[]; total: number }> {
    const { where, params } = this.filter(projectId, q);
    if (q.after) {
      params.push(q.after.occurredAt, q.after.id);
      where.push(`(occurred_at, id) < ($${params.length - 1}, $${params.length})`);
    }
    params.push(q.limit);
    const total = q.withTotal ? ', count(*) OVER ()::int AS total' : '';
    const { rows } = await this.pool.query<ActivityRow & { total?: number }>(
      `SELECT *${total} FROM activity WHERE ${where.join(' AND ')}
       ORDER BY occurred_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    return { rows: rows.map(({ total: _, ...row }) => row), total: rows[0]?.total ?? 0 };
  }

  async count(projectId: string, q: Pick<ActivityQuery, 'types' | 'contactId'> & { since?: Date }): Promise<number> {
    const { where, params } = this.filter(projectId, q);
    if (q.since) {
      params.push(q.since);
      where.push(`occurred_at >= $${params.length}`);
    }
    const { rows } = await this.pool.query<{ count: number }>(
      `SELECT count(*) FROM activity WHERE ${where.join(' AND ')}`,
      params,
    );
    return rows[0].count;
  }

  async countsByType(projectId: string, since: Date): Promise<{ type: string; count: number }[]> {
    const { rows } = await this.pool.query<{ type: string; count: number }>(
      `SELECT type, count(*) FROM activity WHERE project_id = $1 AND occurred_at >= $2
       GROUP BY type ORDER BY count(*) DESC, type`,
      [projectId, since],
    );
    return rows;
  }

  async types(projectId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ type: string }>(
      'SELECT DISTINCT type FROM activity WHERE project_id = $1 ORDER BY type',
      [projectId],
    );
    return rows.map((r) => r.type);
  }
}
