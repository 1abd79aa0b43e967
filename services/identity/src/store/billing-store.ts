import type { Pool } from '@svc/lib/db';

export interface BillingRow {
  project_id: string;
  emails_limit: string | null;
  contacts_limit: string | null;
  events_limit: string | null;
  provider: string;
  customer_id: string;
  subscription_id: string;
  subscription_status: string;
  updated_at: Date;
}

export type LimitColumn = 'emails_limit' | 'contacts_limit' | 'events_limit';

export interface AccountUpdate {
  provider: string;
  customerId: string;
  subscriptionId: string;
  status: string;
}

/** Table `billing`: one row per project once caps were set or the payment provider told about it. */
export class BillingStore {
  constructor(private readonly pool: Pool) {}

  async find(projectId: string): Promise<BillingRow | null> {
    const { rows } = await this.pool.query<BillingRow>('SELECT * FROM billing WHERE project_id = $1', [projectId]);
    return rows[0] ?? null;
  }

  /** Sets the given columns (a null makes the category unlimited); the others keep their value. */
  async setLimits(projectId: string, set: Partial<Record<LimitColumn, number | null>>): Promise<BillingRow> {
    const cols = Object.keys(set) as LimitColumn[];
    const values = cols.map((c) => set[c]);
    const assign = cols.map((c, i) => `${c} = $${i + 2}`);
    const { rows } = await this.pool.query<BillingRow>(
      `INSERT INTO billing (project_id${cols.map((c) => `, ${c}`).join('')})
       VALUES ($1${cols.map((_, i) => `, $${i + 2}`).join('')})
       ON CONFLICT (project_id) DO UPDATE SET ${[...assign, 'updated_at = now()'].join(', ')}
       RETURNING *`,
      [projectId, ...values],
    );
    return rows[0];
  }

  /** Checkout completed for a project: null when the project does not exist. */
  async recordForProject(projectId: string, a: AccountUpdate): Promise<string | null> {
    const { rows } = await this.pool.query<{ project_id: string }>(
      `INSERT INTO billing (project_id, provider, customer_id, subscription_id, subscription_status)
       SELECT id, $2, $3, $4, $5 FROM projects WHERE id = $1
       ON CONFLICT (project_id) DO UPDATE SET provider = $2, customer_id = $3,
         subscription_id = CASE WHEN $4 = '' THEN billing.subscription_id ELSE $4 END,
         subscription_status = CASE WHEN $5 = '' THEN billing.subscription_status ELSE $5 END, updated_at = now()
       RETURNING project_id`,
      [projectId, a.provider, a.customerId, a.subscriptionId, a.status],
    );
    return rows[0]?.project_id ?? null;
  }

  /** A later change of the provider's customer (subscription updated or ended): null when no project has it. */
  async recordForCustomer(a: AccountUpdate): Promise<string | null> {
    const { rows } = await this.pool.query<{ project_id: string }>(
      `UPDATE billing SET
         subscription_id = CASE WHEN $3 = '' THEN subscription_id ELSE $3 END,
         subscription_status = CASE WHEN $4 = '' THEN subscription_status ELSE $4 END, updated_at = now()
       WHERE provider = $1 AND customer_id = $2 AND customer_id <> '' RETURNING project_id`,
      [a.provider, a.customerId, a.subscriptionId, a.status],
    );
    return rows[0]?.project_id ?? null;
  }
}
