import { randomUUID } from 'node:crypto';
import { withTransaction, type Pool, type Queryable } from '@svc/lib/db';
import { conflict, flatBadRequest, notFound, validationError } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { enqueueMessage } from '@svc/lib/outbox';
import type { ContactRow } from '../store/contact-rows.js';
import type { ContactsStore, SortColumn } from '../store/contacts-store.js';
import type { EventsStore } from '../store/events-store.js';
import type { FieldsStore } from '../store/fields-store.js';
import { contactCreated, contactDeleted, contactUpdated, eventTracked } from './bus-messages.js';
import { decodeCursor, keysetPage } from './cursor.js';
import { GroupCommit } from '@svc/lib/group-commit';
import { applyDataPatch, splitDataPatch, type DataPatch } from './custom-data.js';
import { isValidEmail } from './email-address.js';
import { recordNewFields } from './fields.js';
import { nextSubscription, subscriptionEvent, type WriteMode } from './subscription.js';
import { newFieldTypes, type FieldType } from './type-inference.js';

/** PostgreSQL's unique_violation on `contacts_project_email` (one address per project, case-insensitively). */
function isEmailUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === '23505' && e.constraint === 'contacts_project_email';
}

export interface UpsertInput {
  projectId: string;
  email: unknown;
  subscribed?: boolean;
  defaultSubscribed: boolean;
  data: unknown;
  mode: WriteMode;
}

export interface UpsertResult {
  contact: ContactRow;
  isNew: boolean;
  isUpdate: boolean;
  patch: DataPatch;
}

export interface ListInput {
  projectId: string;
  limit: number;
  cursor?: string;
  search?: string;
  subscribed?: boolean;
  sort?: string;
  dir?: string;
}

export const contactNotFound = (id: string) => notFound('Contact', id, 'CONTACT_NOT_FOUND');

export function checkEmail(email: unknown, field = 'email'): string {
  if (typeof email !== 'string' || !isValidEmail(email.trim())) {
    throw validationError([
      {
        field,
        message: 'Invalid email',
        code: typeof email === 'string' ? 'invalid_string' : 'invalid_type',
        received: email,
      },
    ]);
  }
  return email.trim();
}

/** Contacts and their custom data: every write path (API, track, send, import, bulk) goes through here. */
export class Contacts {
  /** Per project, the inferred field types already recorded (saves a write per request). */
  private readonly knownTypes = new Map<string, Map<string, FieldType>>();
  /** Upserts from POST /contacts and /v1/send share commits under load, like tracks do. */
  private readonly commits: GroupCommit<{ input: UpsertInput & { email: string }; patch: DataPatch }, UpsertResult>;

  constructor(
    readonly pool: Pool,
    private readonly store: ContactsStore,
    private readonly events: EventsStore,
    private readonly fields: FieldsStore,
  ) {
    this.commits = new GroupCommit(
      () => pool.connect(),
      (tx, w) => this.upsertIn(tx, w.input, w.patch),
      {
        lockOrder: (w) => `${w.input.projectId}:${w.input.email.toLowerCase()}`,
      },
    );
  }

  upsert(input: UpsertInput): Promise<UpsertResult> {
    const email = checkEmail(input.email);
    const patch = splitDataPatch(input.data);
    return this.commits.submit({ input: { ...input, email }, patch });
  }

  /** One contact write inside the caller's transaction (track and import add their own rows to it). */
  async upsertIn(tx: Queryable, input: UpsertInput & { email: string }, patch: DataPatch): Promise<UpsertResult> {
    const { projectId, email } = input;
    let existing = await this.store.byEmailForUpdate(tx, projectId, email);
    if (!existing) {
      const inserted = await this.store.insert(tx, {
        id: randomUUID(),
        projectId,
        email,
        subscribed: nextSubscription(undefined, input.subscribed, input.defaultSubscribed, input.mode),
        data: applyDataPatch({}, patch.patch).data,
      });
      if (inserted) {
        await this.recordTypes(tx, projectId, inserted.data);
        await enqueueMessage(tx, contactCreated(inserted));
        return { contact: inserted, isNew: true, isUpdate: false, patch };
      }
      existing = (await this.store.byEmailForUpdate(tx, projectId, email))!; // lost a concurrent insert race
    }
    const { data, changed } = applyDataPatch(existing.data, patch.patch);
    const subscribed = nextSubscription(existing.subscribed, input.subscribed, input.defaultSubscribed, input.mode);
    let contact = existing;
    if (changed || subscribed !== existing.subscribed) {
      contact = await this.store.update(tx, projectId, existing.id, { email: existing.email, subscribed, data });
      await this.recordTypes(tx, projectId, patch.patch);
      await enqueueMessage(tx, contactUpdated(contact));
      await this.emitFlip(tx, existing.subscribed, contact);
    }
    return { contact, isNew: false, isUpdate: true, patch };
  }

  async get(projectId: string, id: string): Promise<ContactRow> {
    const contact = isUuid(id) ? await this.store.byId(projectId, id) : null;
    if (!contact) throw contactNotFound(id);
    return contact;
  }

  async update(
    projectId: string,
    id: string,
    input: { email?: unknown; subscribed?: boolean; data?: unknown },
  ): Promise<ContactRow> {
    if (!isUuid(id)) throw contactNotFound(id);
    const email = input.email === undefined ? undefined : checkEmail(input.email);
    const patch = splitDataPatch(input.data);
    return withTransaction(this.pool, async (tx) => {
      const existing = await this.store.byIdForUpdate(tx, projectId, id);
      if (!existing) throw contactNotFound(id);
      if (
        email &&
        email.toLowerCase() !== existing.email.toLowerCase() &&
        (await this.store.emailTakenByOther(tx, projectId, email, id))
      ) {
        throw conflict('Another contact in this project already uses this email', { field: 'email', email });
      }
      const { data, changed } = applyDataPatch(existing.data, patch.patch);
      const subscribed = input.subscribed ?? existing.subscribed;
      const newEmail = email ?? existing.email;
      if (!changed && subscribed === existing.subscribed && newEmail === existing.email) return existing;
      const contact = await this.store
        .update(tx, projectId, id, { email: newEmail, subscribed, data })
        .catch((err: unknown) => {
          // Two contacts renamed to one address at once: both pass the check above, the unique index refuses one.
          if (isEmailUniqueViolation(err)) {
            throw conflict('Another contact in this project already uses this email', { field: 'email', email });
          }
          throw err;
        });
      await this.recordTypes(tx, projectId, patch.patch);
      await enqueueMessage(tx, contactUpdated(contact));
      await this.emitFlip(tx, existing.subscribed, contact);
      return contact;
    });
  }

  async remove(projectId: string, id: string): Promise<void> {
    if (!isUuid(id)) throw contactNotFound(id);
    await withTransaction(this.pool, async (tx) => {
      const deleted = await this.store.delete(tx, projectId, id);
      if (!deleted) throw contactNotFound(id);
      await enqueueMessage(tx, contactDeleted(projectId, id, deleted.email));
    });
  }

  /** Subscribes/unsubscribes/deletes in one transaction per batch; flips emit their events. */
  async applyBulk(
    tx: Queryable,
    projectId: string,
    operation: 'subscribe' | 'unsubscribe' | 'delete',
    ids: string[],
  ): Promise<{ done: string[]; missing: string[] }> {
    const rows = await this.store.byIds(tx, projectId, ids);
    const found = new Set(rows.map((r) => r.id));
    for (const row of rows) {
      if (operation === 'delete') {
        await this.store.delete(tx, projectId, row.id);
        await enqueueMessage(tx, contactDeleted(projectId, row.id, row.email));
        continue;
      }
      const subscribed = operation === 'subscribe';
      if (row.subscribed === subscribed) continue;
      const contact = await this.store.update(tx, projectId, row.id, { email: row.email, subscribed, data: row.data });
      await enqueueMessage(tx, contactUpdated(contact));
      await this.emitFlip(tx, row.subscribed, contact);
    }
    return { done: ids.filter((i) => found.has(i)), missing: ids.filter((i) => !found.has(i)) };
  }

  async list(input: ListInput) {
    const sort: SortColumn = input.sort === 'email' ? 'email' : 'createdAt';
    const dir = input.dir === 'asc' ? 'asc' : 'desc';
    const after = input.cursor ? decodeCursor(input.cursor, sort, dir) : undefined;
    const { rows, total } = await this.store.list({
      projectId: input.projectId,
      limit: input.limit,
      search: input.search || undefined,
      subscribed: input.subscribed,
      sort,
      dir,
      after: after && { value: after.value, id: after.id },
    });
    const { page, hasMore, cursor } = keysetPage(rows, input.limit, (last) => ({
      sort,
      dir,
      value: last.sort_value,
      id: last.id,
    }));
    return { contacts: page, hasMore, cursor, total: total ?? 0 };
  }

  /** Contacts by email and by id in one call (ids that are not uuids, or not this project's, are missing). */
  async lookup(
    projectId: string,
    emails: unknown,
    ids: unknown = [],
  ): Promise<{ found: ContactRow[]; missing: string[] }> {
    for (const [field, list, max] of [
      ['emails', emails, 500],
      ['ids', ids, 1000],
    ] as const) {
      if (!Array.isArray(list) || list.some((e) => typeof e !== 'string')) {
        throw validationError([{ field, message: `${field} must be an array of strings`, code: 'invalid_type' }]);
      }
      if (list.length > max) {
        throw validationError([{ field, message: `At most ${max} ${field} per call`, code: 'too_big' }]);
      }
    }
    const byEmail = (emails as string[]).length ? await this.store.byEmails(projectId, emails as string[]) : [];
    const wanted = (ids as string[]).filter(isUuid);
    const byId = wanted.length ? await this.store.byIds(this.store.pool, projectId, wanted, true) : [];
    const have = new Set(byEmail.map((c) => c.email.toLowerCase()));
    const haveId = new Set(byId.map((c) => c.id));
    const seen = new Set(byEmail.map((c) => c.id));
    return {
      found: [...byEmail, ...byId.filter((c) => !seen.has(c.id))],
      missing: [
        ...(emails as string[]).filter((e) => !have.has(e.toLowerCase())),
        ...(ids as string[]).filter((id) => !haveId.has(id)),
      ],
    };
  }

  /** Records `contact.subscribed` / `contact.unsubscribed` when a write flipped the state. */
  private async emitFlip(tx: Queryable, before: boolean, contact: ContactRow): Promise<void> {
    const name = subscriptionEvent(before, contact.subscribed);
    if (!name) return;
    const event = await this.events.insert(tx, {
      id: randomUUID(),
      projectId: contact.project_id,
      contactId: contact.id,
      name,
      data: {},
    });
    await enqueueMessage(tx, eventTracked(event));
  }

  async recordTypes(tx: Queryable, projectId: string, data: Record<string, unknown>): Promise<void> {
    await this.recordTypesOfMany(tx, projectId, [data]);
  }

  /**
   * The types of the fields these contacts' data brings for the first time, in one statement (none
   * when nothing is new); the first contact to bring a field fixes its type, as one recordTypes each.
   */
  async recordTypesOfMany(tx: Queryable, projectId: string, datas: Array<Record<string, unknown>>): Promise<void> {
    let known = this.knownTypes.get(projectId);
    if (!known) {
      known = new Map((await this.fields.types(projectId)).map((t) => [t.path, t.type]));
      this.knownTypes.set(projectId, known);
    }
    const found = new Map<string, FieldType>();
    for (const data of datas) {
      for (const f of newFieldTypes(known, data)) if (!found.has(f.path)) found.set(f.path, f.type);
    }
    if (!found.size) return;
    const fresh = [...found].map(([path, type]) => ({ path, type }));
    await recordNewFields(this.fields, tx, projectId, fresh);
    // Reloaded from committed rows on the next write: this transaction may still roll back.
    this.knownTypes.delete(projectId);
  }

  forgetTypes(projectId: string): void {
    this.knownTypes.delete(projectId);
  }
}

/** POST /contacts answers a missing email with SPEC.md's flat 400. */
export function requireEmailPresent(email: unknown): void {
  if (email === undefined || email === null || email === '') throw flatBadRequest('email is required');
}
