import type { Pool, Queryable } from '@svc/lib/db';

export interface SendRecordRow {
  fingerprint: string;
  answer: unknown;
  created_at: Date;
}

/**
 * Idempotency-Key records of /v1/send, written in the transaction that queues the emails:
 * while the emails stand, so does the record (Redis may lose the gateway's copy).
 * A row older than the TTL counts as absent, and is replaced or removed by `deleteExpired`.
 */
export class SendRecordsStore {
  constructor(
    readonly pool: Pool,
    private readonly ttlSeconds: number,
  ) {}

  async find(projectId: string, key: string): Promise<SendRecordRow | null> {
    const { rows } = await this.pool.query<SendRecordRow>(
      `SELECT fingerprint, answer, created_at FROM send_idempotency
       WHERE project_id = $1 AND key = $2 AND created_at > now() - make_interval(secs => $3)`,
      [projectId, key, this.ttlSeconds],
    );
    return rows[0] ?? null;
  }

  /** False when a live record already holds the key (a concurrent duplicate committed first). */
  async insert(tx: Queryable, projectId: string, key: string, fingerprint: string, answer: unknown): Promise<boolean> {
    const { rowCount } = await tx.query(
      `INSERT INTO send_idempotency (project_id, key, fingerprint, answer) VALUES ($1, $2, $3, $4)
       ON CONFLICT (project_id, key) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, answer = EXCLUDED.answer, created_at = now()
         WHERE send_idempotency.created_at <= now() - make_interval(secs => $5)`,
      [projectId, key, fingerprint, JSON.stringify(answer), this.ttlSeconds],
    );
    return rowCount === 1;
  }

  async deleteExpired(): Promise<number> {
    const { rowCount } = await this.pool.query(
      'DELETE FROM send_idempotency WHERE created_at <= now() - make_interval(secs => $1)',
      [this.ttlSeconds],
    );
    return rowCount ?? 0;
  }
}
