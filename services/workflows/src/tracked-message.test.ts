import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { readBusMessage } from '@svc/lib/bus-topic';
import { EventTrackedSchema } from '@svc/proto/svc/contacts/v1/events_pb';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { trackedItem, trackedMessage, trackedPayload } from './tracked-message.js';

const projectId = '0195f0e2-6c1a-7000-8000-000000000001';
const contactId = '0195f0e2-6c1a-7000-8000-000000000002';

describe('events.tracked as the workflows consumers take it', () => {
  test('a payload in the form contacts writes is read as its decoded EventTracked would be', () => {
    const wire = {
      projectId,
      contactId,
      eventId: 'e',
      name: 'signup',
      data: { n: 3, tags: ['a'], nested: { ok: true, none: null } },
      createdAt: '2026-01-01T00:00:00.123Z',
    };
    const { data: _, ...bare } = wire;
    for (const payload of [wire, bare, { ...wire, eventId: '' }]) {
      const decoded = trackedMessage(readBusMessage(CONTACTS_TOPICS.eventTracked, payload), 'msg-1');
      expect(trackedPayload(payload, 'msg-1')).toEqual(decoded);
    }
    expect(trackedPayload({ ...wire, eventId: '' }, 'msg-1')?.eventId).toBe('msg-1');
  });

  test('a payload in any other form is left to the decode', () => {
    const wire = { projectId, contactId, eventId: 'e', name: 'signup', data: {}, createdAt: '2026-01-01T00:00:00Z' };
    const { projectId: _, ...noProject } = wire;
    const others = [
      { ...noProject, project_id: projectId },
      { ...wire, contactId: 7 },
      { ...wire, data: [1] },
      { ...wire, createdAt: 'yesterday' },
      null,
      'text',
    ];
    for (const payload of others) expect(trackedPayload(payload, 'm')).toBeUndefined();
  });

  test('a decoded message without an event id is keyed by its bus message id', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    const m = create(EventTrackedSchema, { projectId, contactId, name: 'signup', createdAt: timestampFromDate(at) });
    expect(trackedMessage(m, 'msg-2')).toEqual({
      projectId,
      contactId,
      eventId: 'msg-2',
      name: 'signup',
      data: {},
      at,
    });
  });

  test("a batch's event reads as its own message would; a bad one, or another project's, does not", () => {
    const wire = {
      projectId,
      contactId,
      eventId: 'e',
      name: 'signup',
      data: { n: 1 },
      createdAt: '2026-01-01T00:00:00Z',
    };
    expect(trackedItem(projectId, wire, 'contacts-5/0')).toEqual(trackedPayload(wire, 'contacts-5/0'));
    // In proto field names (not the form contacts writes): decoded, keyed by the batch's id and place without an id.
    const { projectId: _, contactId: __, ...rest } = wire;
    const protoNames = { ...rest, project_id: projectId, contact_id: contactId, eventId: '' };
    expect(trackedItem(projectId, protoNames, 'contacts-5/1')).toEqual({
      ...trackedPayload(wire, 'x'),
      eventId: 'contacts-5/1',
    });
    for (const bad of [{ ...wire, contactId: 7 }, { ...wire, createdAt: 'yesterday', data: [1] }, 'text', null])
      expect(trackedItem(projectId, bad, 'contacts-5/2')).toBeUndefined();
    expect(trackedItem('0195f0e2-6c1a-7000-8000-000000000009', wire, 'contacts-5/3')).toBeUndefined();
  });
});
