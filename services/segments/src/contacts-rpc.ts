import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { timestampDate, ValueSchema } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import type { Contact, ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { ContactsPort, MemberView } from './domain/contacts-port.js';

const value = (v: unknown) => fromJson(ValueSchema, v as JsonValue);

const member = (c: Contact): MemberView => ({
  id: c.id,
  email: c.email,
  subscribed: c.subscribed,
  data: (c.data ?? {}) as Record<string, unknown>,
  createdAt: c.createdAt && timestampDate(c.createdAt),
  updatedAt: c.updatedAt && timestampDate(c.updatedAt),
});

/** The contacts service as the segments domain's ContactsPort. */
export function contactsPort(contacts: Client<typeof ContactsService>): ContactsPort {
  return {
    async define(projectId, segmentId, condition) {
      await contacts.defineSegment({
        projectId,
        segmentId,
        static: condition === null,
        condition: condition === null ? undefined : value(condition),
      });
    },
    async forget(projectId, segmentId) {
      await contacts.forgetSegment({ projectId, segmentId });
    },
    async count(projectId, condition) {
      return Number((await contacts.count({ projectId, condition: value(condition) })).count);
    },
    async page(projectId, condition, limit, offset) {
      const r = await contacts.page({ projectId, condition: value(condition), limit, offset });
      return { members: r.contacts.map(member), total: Number(r.total) };
    },
    async *streamIds(projectId, condition) {
      for await (const batch of contacts.stream({ projectId, condition: value(condition), subscribedOnly: false })) {
        yield batch.contactIds;
      }
    },
    async lookup(projectId, emails) {
      const r = await contacts.lookupContacts({ projectId, emails });
      return { found: r.found.map((c) => ({ id: c.id, email: c.email })), missing: r.missing };
    },
    async create(projectId, emails, subscribed) {
      const ids: string[] = [];
      for (const email of emails) {
        const r = await contacts.upsertContact({ projectId, email, subscribed, defaultSubscribed: true });
        if (r.contact) ids.push(r.contact.id);
      }
      return ids;
    },
    async setMembers(projectId, segmentId, add, remove) {
      return contacts.setSegmentMembers({ projectId, segmentId, addContactIds: add, removeContactIds: remove });
    },
    async match(projectId, contactId, segmentIds) {
      return (await contacts.matchSegments({ projectId, contactId, segmentIds })).segmentIds;
    },
  };
}
