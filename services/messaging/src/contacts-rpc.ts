import type { JsonObject } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import { AppError } from '@svc/lib/errors';
import { appErrorOf } from '@svc/lib/rpc-errors';
import type { Contact, ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
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

/** LookupContacts takes at most this many ids per call. */
const LOOKUP_LIMIT = 1000;

/** The contacts service as messaging's contact directory. */
export function contactsDirectory(contacts: Client<typeof ContactsService>): ContactDirectory {
  return {
    async upsertMany(projectId, emails, opts) {
      const items = emails.map((email) => ({
        email,
        subscribed: opts.subscribed,
        defaultSubscribed: false, // SPEC.md: new contacts created by /v1/send start unsubscribed
        data: opts.data as JsonObject | undefined,
      }));
      const { results } = await contacts.upsertContacts({ projectId, items });
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
