import type { BillingCaps } from '@svc/lib/billing-caps';
import type { EmailsStore } from '../store/emails-store.js';

/** The email side of billing: usage of the period, and whether a campaign of `n` recipients fits the cap. */
export class EmailBilling {
  constructor(
    private readonly caps: BillingCaps,
    private readonly emails: EmailsStore,
  ) {}

  used(projectId: string, since: Date): Promise<number> {
    return this.emails.countBillable(projectId, since);
  }

  /** Without a cap nothing is counted (`used` 0): callers ask with 0 first to learn whether there is one. */
  async allowance(projectId: string, n: number): Promise<{ allowed: boolean; used: number; limit?: number }> {
    const u = await this.caps.usage(projectId, 'emails');
    if (!u) return { allowed: true, used: 0 };
    return { allowed: u.used + n <= u.limit, used: u.used, limit: u.limit };
  }
}
