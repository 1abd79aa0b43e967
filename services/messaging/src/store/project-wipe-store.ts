import { withTransaction, type Pool } from '@svc/lib/db';

/** Tables keyed by project_id, children before what they hang off. */
const PROJECT_TABLES = [
  'activity',
  'suppressions',
  'send_idempotency',
  'dev_mail',
  'uploads',
  'emails',
  'templates',
  'domains',
] as const;

/**
 * A project's step of a reset or deletion: every row messaging holds for it, in one transaction. Queued
 * mail goes with its rows (the delivery worker claims nothing of the project afterwards); the attempts and
 * stored attachments of its emails hang off email and send ids, not the project, so they go first.
 */
export class ProjectWipeStore {
  constructor(private readonly pool: Pool) {}

  async wipe(projectId: string): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      await tx.query('DELETE FROM email_attempts WHERE email_id IN (SELECT id FROM emails WHERE project_id = $1)', [
        projectId,
      ]);
      await tx.query(
        `DELETE FROM send_attachments WHERE send_id IN (
           SELECT send_id FROM emails WHERE project_id = $1 AND send_id IS NOT NULL)`,
        [projectId],
      );
      for (const table of PROJECT_TABLES) await tx.query(`DELETE FROM ${table} WHERE project_id = $1`, [projectId]);
    });
  }
}
