import { forbidden, validationError, type FieldError } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { AccountUpdate, BillingRow, BillingStore, LimitColumn } from '../store/billing-store.js';
import type { Identity } from './identity.js';
import { canManageProject } from './roles.js';

export type Category = 'emails' | 'contacts' | 'events';
const CATEGORIES: Category[] = ['emails', 'contacts', 'events'];

/** The largest cap accepted: beyond it a cap means nothing and the counters stay exact in a double. */
export const MAX_LIMIT = 1_000_000_000_000;

export type Limits = Partial<Record<Category, number>>;

export interface BillingView {
  limits: Limits;
  row: BillingRow | null;
  canManage: boolean;
}

const column = (c: Category) => `${c}_limit` as LimitColumn;

function limitsOf(row: BillingRow | null): Limits {
  const out: Limits = {};
  for (const c of CATEGORIES) {
    const v = row?.[column(c)];
    if (v !== null && v !== undefined) out[c] = Number(v);
  }
  return out;
}

/** Billing caps of a project and its payment-provider account; the rules of who may change them. */
export class Billing {
  constructor(
    private readonly identity: Identity,
    private readonly store: BillingStore,
  ) {}

  /** Any member reads; another user's project is a 404 (identity's rule). */
  async view(userId: string, projectId: string): Promise<BillingView> {
    const project = await this.identity.project(userId, projectId);
    const row = await this.store.find(projectId);
    return { limits: limitsOf(row), row, canManage: canManageProject(project.role!) };
  }

  /** Owners and admins. `set`: a number sets the cap, null makes it unlimited; absent categories keep theirs. */
  async setLimits(userId: string, projectId: string, set: Partial<Record<Category, number | null>>): Promise<Limits> {
    const project = await this.identity.project(userId, projectId);
    if (!canManageProject(project.role!))
      throw forbidden('Only owners and admins can change billing limits', 'PROJECT_ACCESS_DENIED');
    const errors: FieldError[] = [];
    const columns: Partial<Record<LimitColumn, number | null>> = {};
    for (const c of CATEGORIES) {
      const v = set[c];
      if (v === undefined) continue;
      if (v !== null && (!Number.isSafeInteger(v) || v < 0 || v > MAX_LIMIT)) {
        errors.push({
          field: c,
          code: 'invalid_limit',
          message: `${c} must be null (unlimited) or a whole number from 0 to ${MAX_LIMIT}`,
          received: v,
        });
      }
      columns[column(c)] = v;
    }
    if (errors.length) throw validationError(errors);
    if (Object.keys(columns).length === 0) return limitsOf(await this.store.find(projectId));
    return limitsOf(await this.store.setLimits(projectId, columns));
  }

  /** For the enforcing services: an unknown project has no caps. */
  async limitsOfProject(projectId: string): Promise<Limits> {
    return isUuid(projectId) ? limitsOf(await this.store.find(projectId)) : {};
  }

  /** A verified provider notification: by project (checkout) or by the provider's customer id. */
  async recordAccount(projectId: string, update: AccountUpdate): Promise<string | null> {
    if (projectId) return isUuid(projectId) ? this.store.recordForProject(projectId, update) : null;
    return update.customerId ? this.store.recordForCustomer(update) : null;
  }
}
