import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import type { Contact, ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { AudienceContact, ContactsPort } from './domain/ports.js';

const value = (v: unknown) => (v === undefined ? undefined : fromJson(ValueSchema, v as JsonValue));

const audienceContact = (c: Contact): AudienceContact => ({
  id: c.id,
  email: c.email,
  subscribed: c.subscribed,
  data: (c.data ?? {}) as Record<string, unknown>,
});

/** The contacts service as the campaigns domain's ContactsPort. */
export function contactsPort(contacts: Client<typeof ContactsService>): ContactsPort {
  return {
    async count(projectId, condition) {
      return Number((await contacts.count({ projectId, condition: value(condition) })).count);
    },
    async *stream(projectId, condition, subscribedOnly, afterId) {
      const batches = contacts.stream({
        projectId,
        condition: value(condition),
        subscribedOnly,
        afterId: afterId ?? '',
        withContacts: true,
      });
      for await (const batch of batches) yield batch.contacts.map(audienceContact);
    },
    async lookup(projectId, email) {
      const r = await contacts.lookupContacts({ projectId, emails: [email] });
      return r.found[0] ? audienceContact(r.found[0]) : null;
    },
  };
}
