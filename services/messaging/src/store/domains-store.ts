import type { Pool } from '@svc/lib/db';

export interface DomainRow {
  id: string;
  project_id: string;
  domain: string;
  status: 'pending' | 'verified';
  verification_token: string;
  dkim_selector: string;
  dkim_private_key: string;
  dkim_public_key: string;
  record_status: Record<string, boolean>;
  created_at: Date;
  verified_at: Date | null;
  last_checked_at: Date | null;
}

export type NewDomain = Pick<
  DomainRow,
  'id' | 'project_id' | 'domain' | 'verification_token' | 'dkim_selector' | 'dkim_private_key' | 'dkim_public_key'
>;

export class DomainsStore {
  constructor(readonly pool: Pool) {}

  /** Null when the project already has this domain. */
  async insert(d: NewDomain): Promise<DomainRow | null> {
    const { rows } = await this.pool.query<DomainRow>(
      `INSERT INTO domains
         (id, project_id, domain, verification_token, dkim_selector, dkim_private_key, dkim_public_key)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (project_id, domain) DO NOTHING RETURNING *`,
      [d.id, d.project_id, d.domain, d.verification_token, d.dkim_selector, d.dkim_private_key, d.dkim_public_key],
    );
    return rows[0] ?? null;
  }

  async list(projectId: string): Promise<DomainRow[]> {
    const { rows } = await this.pool.query<DomainRow>(
      'SELECT * FROM domains WHERE project_id = $1 ORDER BY created_at DESC',
      [projectId],
    );
    return rows;
  }

  async get(projectId: string, id: string): Promise<DomainRow | null> {
    const { rows } = await this.pool.query<DomainRow>('SELECT * FROM domains WHERE project_id = $1 AND id = $2', [
      projectId,
      id,
    ]);
    return rows[0] ?? null;
  }

  async delete(projectId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM domains WHERE project_id = $1 AND id = $2', [
      projectId,
      id,
    ]);
    return rowCount === 1;
  }

  /** Verified domains of the project that `domain` equals or is a subdomain of, most specific first. */
  /** Projects with a verified domain equal to `domain` or a parent of it (inbound mail: a scan of the few domains). */
  async projectsCovering(domain: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ project_id: string }>(
      `SELECT DISTINCT project_id FROM domains WHERE status = 'verified' AND ($1 = domain OR $1 LIKE '%.' || domain)`,
      [domain],
    );
    return rows.map((r) => r.project_id);
  }

  async verifiedCovering(projectId: string, domain: string): Promise<DomainRow | null> {
    const { rows } = await this.pool.query<DomainRow>(
      `SELECT * FROM domains WHERE project_id = $1 AND status = 'verified' AND ($2 = domain OR $2 LIKE '%.' || domain)
       ORDER BY length(domain) DESC LIMIT 1`,
      [projectId, domain],
    );
    return rows[0] ?? null;
  }

  async saveCheck(
    id: string,
    status: DomainRow['status'],
    recordStatus: Record<string, boolean>,
  ): Promise<DomainRow | null> {
    const { rows } = await this.pool.query<DomainRow>(
      `UPDATE domains SET status = $2, record_status = $3, last_checked_at = now(),
         verified_at = CASE WHEN $2 = 'verified' THEN coalesce(verified_at, now()) ELSE NULL END
       WHERE id = $1 RETURNING *`,
      [id, status, JSON.stringify(recordStatus)],
    );
    return rows[0] ?? null;
  }

  /** Claims domains not checked for `intervalSeconds`: replicas never check the same one at once. */
  async claimDue(intervalSeconds: number, limit: number): Promise<DomainRow[]> {
    const { rows } = await this.pool.query<DomainRow>(
      `UPDATE domains SET last_checked_at = now() WHERE id IN (
         SELECT id FROM domains WHERE last_checked_at IS NULL OR last_checked_at < now() - make_interval(secs => $1)
         ORDER BY last_checked_at NULLS FIRST LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING *`,
      [intervalSeconds, limit],
    );
    return rows;
  }
}
