import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import { AppError } from '@svc/lib/errors';
import type { Contact, ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { ContactDirectory, ContactView } from './domain/contact-directory.js';

const view = (c: Contact | undefined): ContactView => {
  if (!c) throw new Error('contacts service answered without a contact');
  return { id: c.id, email: c.email, subscribed: c.subscribed, data: (c.data ?? {}) as Record<string, unknown> };
};

/**
 * The contacts service as messaging's contact directory. Validation errors of one recipient
 * come back with the contacts field names (`email`, `data.x`); they are re-rooted on the
 * /v1/send body (`to`, `data.x`).
 */
export function contactsDirectory(contacts: Client<typeof ContactsService>): ContactDirectory {
  return {
    async upsert(projectId, email, opts) {
      try {
        const r = await contacts.upsertContact({
          projectId,
          email,
          subscribed: opts.subscribed,
          defaultSubscribed: false, // SPEC.md: new contacts created by /v1/send start unsubscribed
          ...(opts.data !== undefined ? { data: fromJson(ValueSchema, opts.data as JsonValue) } : {}),
        });
        return { contact: view(r.contact), oneOff: (r.oneOff ?? {}) as Record<string, unknown> };
      } catch (err) {
        if (err instanceof AppError && err.errors?.length) {
          throw new AppError({ ...err.toJSON(), errors: err.errors.map((e) => ({ ...e, field: e.field === 'email' ? 'to' : e.field })) });
        }
        throw err;
      }
    },
    async get(projectId, contactId) {
      try {
        return view((await contacts.getContact({ projectId, id: contactId })).contact);
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return null;
        throw err;
      }
    },
    async setSubscribed(projectId, contactId, subscribed) {
      return view((await contacts.updateContact({ projectId, id: contactId, subscribed })).contact);
    },
  };
}
