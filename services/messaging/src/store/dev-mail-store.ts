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

/**
 * Whom a row is shown to: members of its project ($1), or, for account mail (no project, at most
 * KEEP_PER_PROJECT rows), the user whose address ($2) is among its envelope recipients.
 */
const VISIBLE = `(project_id = ANY($1::uuid[])
  OR (project_id IS NULL AND $2 <> '' AND EXISTS (SELECT 1 FROM unnest(rcpt_to) r WHERE lower(r) = lower($2))))`;

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

  /**
   * Newest first: the mail of `projectIds`, and the account mail (no project) whose envelope went to
   * `recipient` (compared as identity compares emails, case-insensitively); '' adds none.
   */
  async list(projectIds: string[], recipient: string, limit: number): Promise<DevMailRow[]> {
    const { rows } = await this.pool.query<DevMailRow>(
      `SELECT * FROM dev_mail WHERE ${VISIBLE} ORDER BY received_at DESC, id LIMIT $3`,
      [projectIds, recipient, limit],
    );
    return rows;
  }

  async get(id: string, projectIds: string[], recipient: string): Promise<DevMailRow | null> {
    const { rows } = await this.pool.query<DevMailRow>(`SELECT * FROM dev_mail WHERE id = $3 AND ${VISIBLE}`, [
      projectIds,
      recipient,
      id,
    ]);
    return rows[0] ?? null;
  }
}
