import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { timestampDate, ValueSchema } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import { isAppError } from '@svc/lib/errors';
import type { Contact, ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { ContactsPort, ContactView } from './domain/ports.js';

const view = (c: Contact): ContactView => ({
  id: c.id,
  email: c.email,
  subscribed: c.subscribed,
  data: (c.data ?? {}) as Record<string, unknown>,
  createdAt: c.createdAt && timestampDate(c.createdAt),
  updatedAt: c.updatedAt && timestampDate(c.updatedAt),
});

const missing = (err: unknown) => isAppError(err) && err.status === 404;

/** The contacts service as the workflows domain's ContactsPort. */
export function contactsPort(contacts: Client<typeof ContactsService>): ContactsPort {
  return {
    async get(projectId, id) {
      try {
        const r = await contacts.getContact({ projectId, id });
        return r.contact ? view(r.contact) : null;
      } catch (err) {
        if (missing(err)) return null;
        throw err;
      }
    },
    async getMany(projectId, ids) {
      const out = new Map<string, ContactView>();
      for (let i = 0; i < ids.length; i += 1000) {
        const r = await contacts.lookupContacts({ projectId, ids: ids.slice(i, i + 1000) });
        for (const c of r.found) out.set(c.id, view(c));
      }
      return out;
    },
    async byEmail(projectId, email) {
      const r = await contacts.lookupContacts({ projectId, emails: [email] });
      return r.found[0] ? view(r.found[0]) : null;
    },
    async update(projectId, id, patch) {
      await contacts.updateContact({
        projectId,
        id,
        subscribed: patch.subscribed,
        data: patch.data === undefined ? undefined : fromJson(ValueSchema, patch.data as JsonValue),
      });
    },
  };
}
