import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import { CallBatcher, type Settled } from '@svc/lib/call-batcher';
import { AppError } from '@svc/lib/errors';
import { currentContext, runInContext, type RequestContext } from '@svc/lib/request-context';
import { appErrorOf } from '@svc/lib/rpc-errors';
import type {
  Contact,
  ContactsService,
  ContactUpsertSchema,
  UpsertContactsResponse,
} from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { ContactDirectory, ContactView } from './domain/contact-directory.js';

const view = (c: Contact | undefined): ContactView => {
  if (!c) throw new Error('contacts service answered without a contact');
  return { id: c.id, email: c.email, subscribed: c.subscribed, data: (c.data ?? {}) as Record<string, unknown> };
};

/** A recipient's error names the contacts fields (`email`, `data.x`): re-rooted on the /v1/send body. */
function recipientError(err: AppError, index: number): AppError {
  if (!err.errors?.length) return err;
  const errors = err.errors.map((e) => ({ ...e, field: e.field === 'email' ? `to.${index}` : e.field }));
  return new AppError({ ...err.toJSON(), errors });
}

/** UpsertContacts takes at most this many items per call (a send has at most 50 recipients). */
const MAX_UPSERT_CALL_ITEMS = 1000;

/** LookupContacts takes at most this many ids per call. */
const LOOKUP_LIMIT = 1000;

type Upsert = MessageInitShape<typeof ContactUpsertSchema>;
type UpsertResult = UpsertContactsResponse['results'];
interface UpsertCall {
  items: Upsert[];
  context: RequestContext | undefined;
}

/** Sends arriving within this window share one UpsertContacts call per project, of at most its item limit. */
const UPSERT_WINDOW_MS = 2;

/**
 * Concurrent sends of a project share one UpsertContacts call (one RPC instead of one per request). A call
 * of one send runs in its request's context; a shared call that fails as a whole (a billing cap, the contacts
 * service down) is retried one send per call, so a send fails only for its own reasons.
 */
function upsertCoalescer(contacts: Client<typeof ContactsService>) {
  const one = (projectId: string, c: UpsertCall) =>
    runInContext(c.context, async () => (await contacts.upsertContacts({ projectId, items: c.items })).results);
  const batchers = new Map<string, CallBatcher<UpsertCall, UpsertResult>>();
  const batcher = (projectId: string) => {
    let b = batchers.get(projectId);
    if (!b) {
      b = new CallBatcher<UpsertCall, UpsertResult>(
        async (calls) => {
          if (batchers.get(projectId) === b) batchers.delete(projectId);
          if (calls.length === 1) return [{ ok: true, value: await one(projectId, calls[0]) }];
          const all = await contacts.upsertContacts({ projectId, items: calls.flatMap((c) => c.items) }).then(
            (r) => r.results,
            () => null,
          );
          if (!all) return Promise.all(calls.map((c) => settle(one(projectId, c))));
          let at = 0;
          return calls.map((c) => ({ ok: true, value: all.slice(at, (at += c.items.length)) }));
        },
        { windowMs: UPSERT_WINDOW_MS, maxBatch: MAX_UPSERT_CALL_ITEMS, weight: (c) => c.items.length },
      );
      batchers.set(projectId, b);
    }
    return b;
  };
  return (projectId: string, items: Upsert[]) => batcher(projectId).submit({ items, context: currentContext() });
}

const settle = <O>(p: Promise<O>): Promise<Settled<O>> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

/** The contacts service as messaging's contact directory. */
export function contactsDirectory(contacts: Client<typeof ContactsService>): ContactDirectory {
  const upsert = upsertCoalescer(contacts);
  return {
    async upsertMany(projectId, emails, opts) {
      const items = emails.map((email) => ({
        email,
        subscribed: opts.subscribed,
        defaultSubscribed: false, // SPEC.md: new contacts created by /v1/send start unsubscribed
        data: opts.data as JsonObject | undefined,
      }));
      const results = await upsert(projectId, items);
      return results.map((r, index) => {
        if (r.result.case === 'error') throw recipientError(appErrorOf(r.result.value), index);
        if (r.result.case !== 'upserted') throw new Error('contacts service answered an item without a result');
        return {
          contact: view(r.result.value.contact),
          oneOff: (r.result.value.oneOff ?? {}) as Record<string, unknown>,
        };
      });
    },
    async get(projectId, contactId) {
      try {
        return view((await contacts.getContact({ projectId, id: contactId })).contact);
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return null;
        throw err;
      }
    },
    async subscribedNow(projectId, recipients) {
      const chunks: string[][] = [];
      for (let i = 0; i < recipients.length; i += LOOKUP_LIMIT)
        chunks.push(recipients.slice(i, i + LOOKUP_LIMIT).map((r) => r.contactId));
      const answers = await Promise.all(chunks.map((ids) => contacts.lookupContacts({ projectId, ids })));
      return new Set(answers.flatMap((a) => a.found.filter((c) => c.subscribed).map((c) => c.id)));
    },
    async findByEmail(projectId, email) {
      const found = (await contacts.lookupContacts({ projectId, emails: [email] })).found[0];
      return found ? view(found) : null;
    },
    async setSubscribed(projectId, contactId, subscribed) {
      return view((await contacts.updateContact({ projectId, id: contactId, subscribed })).contact);
    },
  };
}
