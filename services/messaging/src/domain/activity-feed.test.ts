import { toActivity } from './activity-feed.js';

const contactId = '11111111-1111-4111-8111-111111111111';
const emailId = '22222222-2222-4222-8222-222222222222';

describe('activity read model', () => {
  test('email lifecycle messages become email.<type> rows keyed by the bus message id', () => {
    const row = toActivity({
      id: 'messaging-7',
      subject: 'emails.open',
      data: { projectId: 'p', contactId, emailId, type: 'open', occurredAt: '2026-01-02T03:04:05.000Z', data: { email: 'a@b.com', isFirstOpen: true } },
    });
    expect(row).toMatchObject({ source_id: 'messaging-7', project_id: 'p', type: 'email.open', contact_id: contactId, email_id: emailId, email: 'a@b.com' });
    expect(row!.occurred_at.toISOString()).toBe('2026-01-02T03:04:05.000Z');
  });

  test('tracked events become `event` rows; system names keep their name as type; email.* names are skipped', () => {
    const base = { projectId: 'p', contactId, eventId: 'e', createdAt: '2026-01-01T00:00:00Z' };
    expect(toActivity({ id: 'c-1', subject: 'events.tracked', data: { ...base, name: 'purchase', data: { amount: 3 } } })).toMatchObject({ type: 'event', name: 'purchase', data: { amount: 3, eventId: 'e' } });
    expect(toActivity({ id: 'c-2', subject: 'events.tracked', data: { ...base, name: 'contact.unsubscribed' } })).toMatchObject({ type: 'contact.unsubscribed' });
    expect(toActivity({ id: 'c-3', subject: 'events.tracked', data: { ...base, name: 'email.open' } })).toBeNull();
    expect(toActivity({ id: 'c-4', subject: 'contacts.updated', data: {} })).toBeNull();
  });
});
