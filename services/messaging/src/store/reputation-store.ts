import type { Pool } from '@svc/lib/db';

export interface VolumeCounts {
  sent: number;
  bounced: number;
  complained: number;
}

export class ReputationStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Mail of the project created since `since` that reached a receiving server (sent, or bounced at SMTP
   * time without a sent_at), test messages left out, and how much of it bounced or complained.
   * emails_project_created bounds the scan to the project's rows of the window.
   */
  async counts(projectId: string, since: Date): Promise<VolumeCounts> {
    const { rows } = await this.pool.query<{ sent: string; bounced: string; complained: string }>(
      `SELECT count(*) AS sent,
              count(*) FILTER (WHERE bounced_at IS NOT NULL) AS bounced,
              count(*) FILTER (WHERE complained_at IS NOT NULL) AS complained
       FROM emails
       WHERE project_id = $1 AND created_at >= $2 AND NOT test AND (sent_at IS NOT NULL OR bounced_at IS NOT NULL)`,
      [projectId, since],
    );
    return { sent: Number(rows[0].sent), bounced: Number(rows[0].bounced), complained: Number(rows[0].complained) };
  }
}
