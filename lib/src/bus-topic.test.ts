import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { busMessage, readBusMessage } from './bus-topic.js';

describe('bus topics', () => {
  const at = new Date('2026-11-23T10:00:00.123Z');

  test('a message is stored as proto3 JSON with the names and shapes the README documents', () => {
    const m = busMessage(CONTACTS_TOPICS.created, {
      projectId: 'p1',
      contact: { id: 'c1', email: 'a@b.co', subscribed: true, data: { plan: 'pro', n: 2 }, createdAt: timestampFromDate(at) },
    });
    expect(m).toEqual({
      subject: 'contacts.created',
      payload: {
        projectId: 'p1',
        contact: { id: 'c1', email: 'a@b.co', subscribed: true, data: { plan: 'pro', n: 2 }, createdAt: '2026-11-23T10:00:00.123Z' },
      },
    });
  });

  test('a consumer reads the generated type and ignores fields a newer publisher added', () => {
    const read = readBusMessage(CONTACTS_TOPICS.deleted, { projectId: 'p1', contactId: 'c1', email: 'a@b.co', addedLater: 1 });
    expect(read.$typeName).toBe('svc.contacts.v1.ContactDeleted');
    expect(read.contactId).toBe('c1');
  });

  test('a payload of the wrong shape is refused, not half-read', () => {
    expect(() => readBusMessage(CONTACTS_TOPICS.eventTracked, { projectId: 5 })).toThrow();
  });
});
