import { readBusMessage } from '@svc/lib/bus-topic';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import type { ContactRow, EventRow } from '../store/contact-rows.js';
import { contactCreated, contactDeleted, contactUpdated, eventTracked } from './bus-messages.js';

const projectId = '11111111-1111-4111-8111-111111111111';
const contact: ContactRow = {
  id: '22222222-2222-4222-8222-222222222222',
  project_id: projectId,
  email: 'Ann@Example.com',
  subscribed: false,
  snoozed_until: null,
  data: { plan: 'pro', seats: 3, tags: ['a', 'b'], address: { city: 'Oslo', zip: null }, vip: true },
  created_at: new Date('2026-01-02T03:04:05.678Z'),
  updated_at: new Date('2026-01-03T00:00:00.000Z'),
};

describe('contacts bus messages (README "Messages on the bus")', () => {
  test('contacts.created/updated: {projectId, contact: {id, email, subscribed, data, createdAt, updatedAt}}', () => {
    const payload = {
      projectId,
      contact: {
        id: contact.id,
        email: 'Ann@Example.com',
        subscribed: false,
        data: { plan: 'pro', seats: 3, tags: ['a', 'b'], address: { city: 'Oslo', zip: null }, vip: true },
        createdAt: '2026-01-02T03:04:05.678Z',
        updatedAt: '2026-01-03T00:00:00Z',
      },
    };
    expect(contactCreated(contact)).toEqual({ subject: 'contacts.created', payload });
    expect(contactUpdated(contact)).toEqual({ subject: 'contacts.updated', payload });
  });

  test('a contact without data still carries `data: {}`', () => {
    const m = contactCreated({ ...contact, data: {} });
    expect((m.payload as { contact: { data: unknown } }).contact.data).toEqual({});
  });

  test('contacts.deleted: {projectId, contactId, email}', () => {
    expect(contactDeleted(projectId, contact.id, 'ann@example.com')).toEqual({
      subject: 'contacts.deleted',
      payload: { projectId, contactId: contact.id, email: 'ann@example.com' },
    });
  });

  test('events.tracked: {projectId, contactId, eventId, name, data, createdAt}', () => {
    const event: EventRow = {
      id: '33333333-3333-7333-8333-333333333333',
      project_id: projectId,
      contact_id: contact.id,
      name: 'purchase',
      data: { amount: 12.5, items: [{ sku: 'x' }] },
      created_at: new Date('2026-01-02T03:04:05.000Z'),
    };
    const m = eventTracked(event);
    expect(m).toEqual({
      subject: 'events.tracked',
      payload: {
        projectId,
        contactId: contact.id,
        eventId: event.id,
        name: 'purchase',
        data: { amount: 12.5, items: [{ sku: 'x' }] },
        createdAt: '2026-01-02T03:04:05Z',
      },
    });
    // What a consumer reads back after the wire (JSON text): the same values, data a plain object.
    const read = readBusMessage(CONTACTS_TOPICS.eventTracked, JSON.parse(JSON.stringify(m.payload)));
    expect(read.data).toEqual(event.data);
    expect(read.createdAt && Number(read.createdAt.seconds) * 1000).toBe(event.created_at.getTime());
  });

  test('events.email: the email.* events, same payload on their own subject', () => {
    const event: EventRow = {
      id: '44444444-4444-7444-8444-444444444444',
      project_id: projectId,
      contact_id: contact.id,
      name: 'email.sent',
      data: { emailId: '55555555-5555-7555-8555-555555555555' },
      created_at: new Date('2026-01-02T03:04:05.000Z'),
    };
    const m = eventTracked(event);
    expect(m.subject).toBe('events.email');
    expect(readBusMessage(CONTACTS_TOPICS.emailEventTracked, m.payload).name).toBe('email.sent');
  });
});
