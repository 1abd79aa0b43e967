import type { Pool, PoolClient } from '@svc/lib/db';
import { isDependencyUnavailable } from '@svc/lib/dependency-errors';
import { validationError } from '@svc/lib/errors';
import { GroupCommit } from '@svc/lib/group-commit';
import { checkEmail, type Contacts, type UpsertInput, type UpsertResult } from './contacts.js';
import { splitDataPatch, type DataPatch } from './custom-data.js';

/** Largest batch of one UpsertContacts call (a /v1/send has at most 50 recipients). */
export const MAX_UPSERT_ITEMS = 1000;

export interface UpsertItem {
  email: string;
  subscribed?: boolean;
  defaultSubscribed: boolean;
  data?: unknown;
}

export type UpsertItemResult = { ok: true; value: UpsertResult } | { ok: false; error: unknown };

interface Prepared {
  input: UpsertInput & { email: string };
  patch: DataPatch;
}

/**
 * UpsertContacts: the items of one call are checked, then written in one transaction, each in
 * a savepoint so that an item failing in the database (e.g. the field cap) leaves the others
 * written. Calls arriving together share a commit, as single upserts do.
 */
export class ContactUpserts {
  private readonly commits: GroupCommit<Prepared[], UpsertItemResult[]>;

  constructor(
    pool: Pool,
    private readonly contacts: Contacts,
  ) {
    this.commits = new GroupCommit(
      () => pool.connect(),
      (tx, items) => this.write(tx, items),
    );
  }

  async upsertMany(projectId: string, items: UpsertItem[]): Promise<UpsertItemResult[]> {
    if (items.length > MAX_UPSERT_ITEMS) {
      throw validationError([
        { field: 'items', code: 'too_big', message: `At most ${MAX_UPSERT_ITEMS} items per call` },
      ]);
    }
    const results: UpsertItemResult[] = new Array(items.length);
    const prepared: { index: number; item: Prepared }[] = [];
    items.forEach((item, index) => {
      try {
        const email = checkEmail(item.email);
        const input = { ...item, projectId, email, data: item.data, mode: 'set' as const };
        prepared.push({ index, item: { input, patch: splitDataPatch(item.data) } });
      } catch (error) {
        results[index] = { ok: false, error };
      }
    });
    if (prepared.length) {
      const written = await this.commits.submit(prepared.map((p) => p.item));
      prepared.forEach((p, i) => {
        results[p.index] = written[i];
      });
    }
    return results;
  }

  private async write(tx: PoolClient, items: Prepared[]): Promise<UpsertItemResult[]> {
    // Rows are locked in address order, like the single upserts' group commit, so that concurrent
    // transactions cannot deadlock; a repeated address keeps its order (the sort is stable).
    const key = (i: number) => items[i].input.email.toLowerCase();
    const order = items.map((_, i) => i).sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a - b));
    const results: UpsertItemResult[] = new Array(items.length);
    for (const i of order) {
      await tx.query('SAVEPOINT upsert_item');
      try {
        results[i] = { ok: true, value: await this.contacts.upsertIn(tx, items[i].input, items[i].patch) };
        await tx.query('RELEASE SAVEPOINT upsert_item');
      } catch (error) {
        if (isDependencyUnavailable(error)) throw error;
        await tx.query('ROLLBACK TO SAVEPOINT upsert_item');
        results[i] = { ok: false, error };
      }
    }
    return results;
  }
}
