import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { readBusMessage } from '@svc/lib/bus-topic';
import { EventTrackedSchema } from '@svc/proto/svc/contacts/v1/events_pb';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import {
  FEED_LIFECYCLE_TYPES,
  lifecycleActivity,
  sentActivity,
  trackedActivity,
  trackedPayloadActivity,
} from './activity-feed.js';
import { lifecycleMessage } from './email-events.js';

const projectId = '00000000-0000-4000-8000-000000000000';
const contactId = '11111111-1111-4111-8111-111111111111';
const emailId = '22222222-2222-4222-8222-222222222222';

describe('activity read model', () => {
  test("a lifecycle message as delivery publishes it: an email.<type> row keyed by the bus message's id", () => {
    const at = new Date('2026-01-02T03:04:05.000Z');
    const email = {
      id: emailId,
      project_id: projectId,
      contact_id: contactId,
      to_email: 'a@b.com',
      subject: 'Hi',
      template_id: null,
    };
    const { payload } = lifecycleMessage(email, 'open', { isFirstOpen: true }, at);
    const wire = JSON.parse(JSON.stringify(payload));
    const row = lifecycleActivity('messaging-7', readBusMessage(MESSAGING_TOPICS.emailLifecycle, wire));
    expect(row).toMatchObject({
      source_id: 'messaging-7',
      project_id: projectId,
      type: 'email.open',
      contact_id: contactId,
      email_id: emailId,
      email: 'a@b.com',
      data: { email: 'a@b.com', subject: 'Hi', isFirstOpen: true },
    });
    expect(row!.occurred_at.toISOString()).toBe('2026-01-02T03:04:05.000Z');
  });

  test("an emails.sent row made at enqueue is the one the consumer made from the bus (the outbox row's id)", () => {
    const email = { id: emailId, project_id: projectId, contact_id: contactId, to_email: 'a@b.com', subject: 'S' };
    for (const template_id of [null, '33333333-3333-4333-8333-333333333333']) {
      const message = lifecycleMessage({ ...email, template_id }, 'sent', { messageId: '<m@x>' });
      const wire = JSON.parse(JSON.stringify(message.payload));
      const delivered = lifecycleActivity('messaging-42', readBusMessage(MESSAGING_TOPICS.emailLifecycle, wire));
      const made = sentActivity(message, '42');
      expect(made).toEqual({ ...delivered, id: made!.id });
      expect(made).toMatchObject({ source_id: 'messaging-42', type: 'email.sent', contact_id: contactId });
    }
    expect(FEED_LIFECYCLE_TYPES).not.toContain('sent');
    expect(FEED_LIFECYCLE_TYPES).toContain('open');
  });

  test('tracked events become `event` rows; platform names keep their name as type; email.* names are skipped', () => {
    const base = { projectId, contactId, eventId: 'e', createdAt: timestampFromDate(new Date('2026-01-01T00:00:00Z')) };
    const tracked = (name: string, data?: Record<string, number>) =>
      create(EventTrackedSchema, { ...base, name, data });
    expect(trackedActivity('c-1', tracked('purchase', { amount: 3 }))).toMatchObject({
      type: 'event',
      name: 'purchase',
      data: { amount: 3, eventId: 'e' },
    });
    expect(trackedActivity('c-2', tracked('contact.unsubscribed'))).toMatchObject({ type: 'contact.unsubscribed' });
    expect(trackedActivity('c-3', tracked('email.open'))).toBeNull();
    expect(trackedActivity('c-4', tracked('segment.vip.entry'))).toMatchObject({ type: 'segment.vip.entry' });
    // Names clients may track that only look like the platform's are events like any other.
    for (const name of ['contact.deleted', 'contact.Subscribed', 'segment.vip', 'segment.a.b.entry']) {
      expect(trackedActivity('c-4', tracked(name))).toMatchObject({ type: 'event', name });
    }
  });

  test('a tracked payload read as received makes the row its decoded EventTracked makes; others are decoded', () => {
    const wire = {
      projectId,
      contactId,
      eventId: 'e',
      name: 'purchase',
      data: { amount: 3, tags: ['a'], nested: { ok: true, none: null } },
      createdAt: '2026-01-01T00:00:00.123Z',
    };
    const { data: _, ...bare } = wire;
    for (const payload of [wire, bare, { ...wire, name: 'contact.unsubscribed', eventId: '' }]) {
      const decoded = trackedActivity('c-5', readBusMessage(CONTACTS_TOPICS.eventTracked, payload));
      const read = trackedPayloadActivity('c-5', payload);
      expect(read).toEqual({ ...decoded, id: read!.id });
    }
    expect(trackedPayloadActivity('c-6', { ...wire, name: 'email.open' })).toBeNull();
    expect(trackedPayloadActivity('c-7', { ...wire, projectId: 'p' })).toBeNull();
    const others = [{ ...wire, contactId: 7 }, { ...wire, data: [1] }, { ...wire, createdAt: 'yesterday' }, null];
    for (const payload of [...others, { project_id: projectId, name: 'purchase' }]) {
      expect(trackedPayloadActivity('c-8', payload)).toBeUndefined();
    }
  });

  test('a message naming no stored project makes no row (it could never be inserted)', () => {
    expect(trackedActivity('c-4', create(EventTrackedSchema, { projectId: 'p', name: 'purchase' }))).toBeNull();
  });
});
