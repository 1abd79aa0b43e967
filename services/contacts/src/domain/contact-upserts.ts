import type { Pool, PoolClient } from '@svc/lib/db';
import { isDependencyUnavailable } from '@svc/lib/dependency-errors';
import { validationError } from '@svc/lib/errors';
import { GroupCommit } from '@svc/lib/group-commit';
import { enqueueMany } from '@svc/lib/outbox';
import { outgoingContext } from '@svc/lib/request-context';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import type { ContactRow } from '../store/contact-rows.js';
import { ContactBatches } from '../store/contacts-store.js';
import { contactUpdated } from './bus-messages.js';
import { checkEmail, type Contacts, type UpsertInput, type UpsertResult } from './contacts.js';
import { applyDataPatch, splitDataPatch, type DataPatch } from './custom-data.js';
import { nextSubscription } from './subscription.js';

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

/** The set-based write met a case it leaves to the one-by-one path (a concurrent insert). */
class NotSetBased extends Error {}

/** The set-based write of a call failed: its transaction is rolled back, the call is written again one by one. */
class SetWriteFailed extends Error {}

interface Submitted {
  items: Prepared[];
  /** Each item in its own savepoint (after the set-based write failed), so a failing item leaves the others. */
  each?: boolean;
}

/**
 * UpsertContacts: the items of one call are checked, then written in one transaction: set-based
 * (a few statements per call) when the call allows it, else each in a savepoint so that an item
 * failing in the database (e.g. the field cap) leaves the others written. Calls arriving together
 * share a commit, as single upserts do. The set-based write takes no savepoint: when it fails, the
 * transaction rolls back (the group commit retries its other calls alone) and the call is written again,
 * one savepoint per item.
 */
export class ContactUpserts {
  private readonly commits: GroupCommit<Submitted, UpsertItemResult[]>;
  private readonly batches: ContactBatches;

  constructor(
    pool: Pool,
    private readonly contacts: Contacts,
  ) {
    this.batches = new ContactBatches(pool);
    this.commits = new GroupCommit(
      () => pool.connect(),
      (tx, call) => this.write(tx, call),
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
      const items = prepared.map((p) => p.item);
      const written = await this.commits.submit({ items }).catch((err) => {
        if (err instanceof SetWriteFailed) return this.commits.submit({ items, each: true });
        throw err;
      });
      prepared.forEach((p, i) => {
        results[p.index] = written[i];
      });
    }
    return results;
  }

  private async write(tx: PoolClient, { items, each }: Submitted): Promise<UpsertItemResult[]> {
    if (each) return this.writeEach(tx, items);
    let written: UpsertItemResult[] | null;
    try {
      written = await this.writeSet(tx, items);
    } catch (error) {
      if (isDependencyUnavailable(error)) throw error;
      // Whatever failed (a concurrent insert, the field cap) is sorted out item by item, in a new transaction.
      throw new SetWriteFailed('the set-based upsert failed', { cause: error });
    }
    // Null: nothing written yet (only the call's rows locked), so the items go one by one in this transaction.
    return written ?? this.writeEach(tx, items);
  }

  /**
   * The rules of `Contacts.upsertIn` for each item in address order, in a handful of statements: lock
   * the call's contacts (address order), insert the new ones with their `created` rows in one statement,
   * update the changed ones in another. Null (nothing written) when an address repeats or a subscription
   * flips (an event to record): the one-by-one path keeps those exact.
   */
  private async writeSet(tx: PoolClient, items: Prepared[]): Promise<UpsertItemResult[] | null> {
    const projectId = items[0].input.projectId;
    const keys = items.map((i) => i.input.email.toLowerCase());
    if (new Set(keys).size < keys.length || items.some((i) => i.input.projectId !== projectId)) return null;
    const order = items.map((_, i) => i).sort((a, b) => (keys[a] < keys[b] ? -1 : 1));
    const existing = new Map(
      (await this.batches.lockByEmails(tx, projectId, keys)).map((c) => [c.email.toLowerCase(), c]),
    );
    const fresh: Array<{ index: number; subscribed: boolean; data: Record<string, unknown> }> = [];
    const changed: Array<{ index: number; row: ContactRow }> = [];
    const unchanged: Array<{ index: number; row: ContactRow }> = [];
    // What each item brings, in address order: the first contact to bring a field fixes its type.
    const typed: Array<Record<string, unknown>> = [];
    for (const index of order) {
      const { input, patch } = items[index];
      const row = existing.get(keys[index]);
      if (!row) {
        const subscribed = nextSubscription(undefined, input.subscribed, input.defaultSubscribed, input.mode);
        const data = applyDataPatch({}, patch.patch).data;
        fresh.push({ index, subscribed, data });
        typed.push(data);
        continue;
      }
      const { data, changed: dataChanged } = applyDataPatch(row.data, patch.patch);
      const subscribed = nextSubscription(row.subscribed, input.subscribed, input.defaultSubscribed, input.mode);
      if (subscribed !== row.subscribed) return null;
      if (!dataChanged) {
        unchanged.push({ index, row });
        continue;
      }
      changed.push({ index, row: { ...row, data } });
      typed.push(patch.patch);
    }
    await this.contacts.recordTypesOfMany(tx, projectId, typed);

    const results: UpsertItemResult[] = new Array(items.length);
    const answer = (index: number, contact: ContactRow, isNew: boolean) => {
      results[index] = { ok: true, value: { contact, isNew, isUpdate: !isNew, patch: items[index].patch } };
    };
    for (const u of unchanged) answer(u.index, u.row, false);
    if (fresh.length) {
      const ctx = outgoingContext();
      const inserted = await this.batches.insertReturningCreated(
        tx,
        projectId,
        JSON.stringify(fresh.map((f) => [items[f.index].input.email, f.subscribed, f.data])),
        {
          subject: CONTACTS_TOPICS.created.subject,
          requestId: ctx?.requestId ?? null,
          traceparent: ctx?.traceparent ?? null,
        },
      );
      if (inserted.length < fresh.length) throw new NotSetBased('a contact was created concurrently');
      const byEmail = new Map(inserted.map((c) => [c.email.toLowerCase(), c]));
      for (const f of fresh) answer(f.index, byEmail.get(keys[f.index])!, true);
    }
    if (changed.length) {
      const updated = await this.batches.updateMany(
        tx,
        projectId,
        changed.map((c) => c.row),
      );
      const byId = new Map(updated.map((c) => [c.id, c]));
      for (const c of changed) answer(c.index, byId.get(c.row.id)!, false);
      await enqueueMany(
        tx,
        changed.map((c) => contactUpdated(byId.get(c.row.id)!)),
      );
    }
    return results;
  }

  private async writeEach(tx: PoolClient, items: Prepared[]): Promise<UpsertItemResult[]> {
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
