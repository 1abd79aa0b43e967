import type { Pool } from '@svc/lib/db';

export interface DevMailRow {
  id: string;
  email_id: string | null;
  project_id: string | null;
  mail_from: string;
  rcpt_to: string[];
  raw: Buffer;
  received_at: Date;
}

/** Messages kept per project (older ones are dropped as new ones arrive). */
const KEEP_PER_PROJECT = 1000;

/** What embedded mode's local SMTP sink received (migration 007). */
export class DevMailStore {
  constructor(private readonly pool: Pool) {}

  /** Stores a received message, attributed to the project of the email row `emailId` names. */
  async insert(m: Omit<DevMailRow, 'project_id' | 'received_at'>): Promise<void> {
    const { rows } = await this.pool.query<{ project_id: string | null }>(
      `INSERT INTO dev_mail (id, email_id, project_id, mail_from, rcpt_to, raw)
       VALUES ($1, $2, (SELECT project_id FROM emails WHERE id = $2), $3, $4, $5)
       RETURNING project_id`,
      [m.id, m.email_id, m.mail_from, m.rcpt_to, m.raw],
    );
    const project = rows[0]?.project_id ?? null;
    await this.pool.query(
      `DELETE FROM dev_mail WHERE project_id IS NOT DISTINCT FROM $1 AND id IN (
         SELECT id FROM dev_mail WHERE project_id IS NOT DISTINCT FROM $1 ORDER BY received_at DESC OFFSET $2)`,
      [project, KEEP_PER_PROJECT],
    );
  }

  /** Newest first, without the raw source of the messages that are not asked for. */
  async list(projectIds: string[], limit: number): Promise<DevMailRow[]> {
    const { rows } = await this.pool.query<DevMailRow>(
      `SELECT * FROM dev_mail WHERE project_id = ANY($1::uuid[]) ORDER BY received_at DESC, id LIMIT $2`,
      [projectIds, limit],
    );
    return rows;
  }

  async get(id: string, projectIds: string[]): Promise<DevMailRow | null> {
    const { rows } = await this.pool.query<DevMailRow>(
      'SELECT * FROM dev_mail WHERE id = $1 AND project_id = ANY($2::uuid[])',
      [id, projectIds],
    );
    return rows[0] ?? null;
  }
}
