import type { Pool, Queryable } from '@svc/lib/db';

/** NOTIFY channel of newly queued jobs. */
export const JOBS_CHANNEL = 'contacts_jobs';
/** A running job's lease; progress writes renew it, so only a dead worker's job expires. */
const JOB_LEASE_SECONDS = 120;

export interface ImportJobRow {
  id: string;
  project_id: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  filename: string;
  total_rows: number;
  processed: number;
  imported: number;
  updated: number;
  skipped: number;
  errors: Array<{ row: number; email: string; reason: string }>;
  failure: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export interface BulkJobRow {
  id: string;
  project_id: string;
  operation: 'subscribe' | 'unsubscribe' | 'delete';
  status: 'queued' | 'running' | 'completed' | 'failed';
  contact_ids: string[];
  processed: number;
  succeeded: number;
  not_found: string[];
  created_at: Date;
  completed_at: Date | null;
}

const IMPORT_COLUMNS =
  'id, project_id, status, filename, total_rows, processed, imported, updated, skipped, errors, failure, ' +
  'created_at, completed_at';

export class JobsStore {
  constructor(private readonly pool: Pool) {}

  /** Wakes the job loops of every replica (they also poll). */
  private static readonly NOTIFY = `SELECT pg_notify('${JOBS_CHANNEL}', '')`;

  async createImport(j: { id: string; projectId: string; filename: string; csv: Buffer }): Promise<ImportJobRow> {
    const { rows } = await this.pool.query<ImportJobRow>(
      `INSERT INTO import_jobs (id, project_id, status, filename, csv) VALUES ($1, $2, 'queued', $3, $4)
       RETURNING ${IMPORT_COLUMNS}`,
      [j.id, j.projectId, j.filename, j.csv],
    );
    await this.pool.query(JobsStore.NOTIFY);
    return rows[0];
  }

  async importJob(projectId: string, id: string): Promise<ImportJobRow | null> {
    const { rows } = await this.pool.query<ImportJobRow>(
      `SELECT ${IMPORT_COLUMNS} FROM import_jobs WHERE project_id = $1 AND id = $2`,
      [projectId, id],
    );
    return rows[0] ?? null;
  }

  /** Claims the oldest queued import (SKIP LOCKED: one worker per job across replicas). */
  async claimImport(): Promise<(ImportJobRow & { csv: Buffer }) | null> {
    const { rows } = await this.pool.query<ImportJobRow & { csv: Buffer }>(
      `UPDATE import_jobs SET status = 'running', locked_until = now() + make_interval(secs => $1) WHERE id = (
         SELECT id FROM import_jobs WHERE status = 'queued' ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1
       ) RETURNING ${IMPORT_COLUMNS}, csv`,
      [JOB_LEASE_SECONDS],
    );
    return rows[0] ?? null;
  }

  /**
   * Holds the import's row until `tx` ends (FOR KEY SHARE: progress writes still pass, a DELETE waits); false when
   * the job is gone, i.e. a project reset or deletion wiped it: its remaining rows must not be written.
   */
  async holdImport(tx: Queryable, id: string): Promise<boolean> {
    const { rowCount } = await tx.query('SELECT 1 FROM import_jobs WHERE id = $1 FOR KEY SHARE', [id]);
    return rowCount === 1;
  }

  async importProgress(
    id: string,
    p: { totalRows?: number; processed: number; imported: number; updated: number; skipped: number; errors: unknown[] },
  ): Promise<void> {
    await this.pool.query(
      // Each progress write also renews the job's lease.
      `UPDATE import_jobs SET total_rows = COALESCE($2, total_rows), processed = $3, imported = $4, updated = $5,
         skipped = $6, errors = $7, locked_until = now() + make_interval(secs => $8)
       WHERE id = $1`,
      [
        id,
        p.totalRows ?? null,
        p.processed,
        p.imported,
        p.updated,
        p.skipped,
        JSON.stringify(p.errors),
        JOB_LEASE_SECONDS,
      ],
    );
  }

  async finishImport(id: string, status: 'completed' | 'failed', failure?: string): Promise<void> {
    await this.pool.query(
      `UPDATE import_jobs SET status = $2, failure = $3, completed_at = now(), csv = NULL WHERE id = $1`,
      [id, status, failure ?? null],
    );
  }

  /**
   * Jobs whose lease ran out (the process running them died) go back to the queue; an import
   * starts over from its first row, which is safe because rows are upserts.
   */
  async requeueExpiredLeases(): Promise<number> {
    const imports = await this.pool.query(
      `UPDATE import_jobs SET status = 'queued', locked_until = NULL
       WHERE status = 'running' AND csv IS NOT NULL AND locked_until < now()`,
    );
    const bulk = await this.pool.query(
      `UPDATE bulk_jobs SET status = 'queued', locked_until = NULL WHERE status = 'running' AND locked_until < now()`,
    );
    return (imports.rowCount ?? 0) + (bulk.rowCount ?? 0);
  }

  async createBulk(j: { id: string; projectId: string; operation: string; ids: string[] }): Promise<BulkJobRow> {
    const { rows } = await this.pool.query<BulkJobRow>(
      `INSERT INTO bulk_jobs (id, project_id, operation, status, contact_ids)
       VALUES ($1, $2, $3, 'queued', $4::uuid[]) RETURNING *`,
      [j.id, j.projectId, j.operation, j.ids],
    );
    await this.pool.query(JobsStore.NOTIFY);
    return rows[0];
  }

  async bulkJob(projectId: string, id: string): Promise<BulkJobRow | null> {
    const { rows } = await this.pool.query<BulkJobRow>('SELECT * FROM bulk_jobs WHERE project_id = $1 AND id = $2', [
      projectId,
      id,
    ]);
    return rows[0] ?? null;
  }

  async claimBulk(): Promise<BulkJobRow | null> {
    const { rows } = await this.pool.query<BulkJobRow>(
      `UPDATE bulk_jobs SET status = 'running', locked_until = now() + make_interval(secs => $1) WHERE id = (
         SELECT id FROM bulk_jobs WHERE status = 'queued' ORDER BY created_at FOR UPDATE SKIP LOCKED LIMIT 1
       ) RETURNING *`,
      [JOB_LEASE_SECONDS],
    );
    return rows[0] ?? null;
  }

  async finishBulk(
    id: string,
    r: { status: 'completed' | 'failed'; processed: number; succeeded: number; notFound: string[] },
  ): Promise<void> {
    await this.pool.query(
      `UPDATE bulk_jobs SET status = $2, processed = $3, succeeded = $4, not_found = $5, completed_at = now()
       WHERE id = $1`,
      [id, r.status, r.processed, r.succeeded, JSON.stringify(r.notFound)],
    );
  }
}
