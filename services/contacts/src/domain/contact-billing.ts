import type { BillingCaps } from '@svc/lib/billing-caps';

export interface ContactBillingStore {
  /** How many of these addresses (lower case, distinct) are contacts of the project already. */
  countExisting(projectId: string, emails: string[]): Promise<number>;
}

/**
 * The contacts and tracked-events caps (README "Billing"), taken before the write: the addresses
 * that are not contacts yet count against the contacts cap, each track against the events cap.
 * A write that then fails gives back what it took.
 */
export class ContactBilling {
  constructor(
    private readonly caps: BillingCaps,
    private readonly store: ContactBillingStore,
  ) {}

  async guard<T>(projectId: string, what: { emails?: string[]; events?: number }, work: () => Promise<T>): Promise<T> {
    const releases: Array<() => Promise<void>> = [];
    try {
      if (what.events) releases.push(await this.caps.reserve(projectId, 'events', what.events));
      if (what.emails?.length && (await this.caps.limitOf(projectId, 'contacts')) !== undefined) {
        const emails = [...new Set(what.emails.map((e) => e.trim().toLowerCase()))];
        const fresh = emails.length - (await this.store.countExisting(projectId, emails));
        releases.push(await this.caps.reserve(projectId, 'contacts', fresh));
      }
      return await work();
    } catch (err) {
      for (const release of releases) await release();
      throw err;
    }
  }
}
