import type { AppError } from '@svc/lib/errors';
import { isReservedEventName } from '@svc/lib/event-names';
import { checkTrackableEventName } from './event-names.js';

describe('reserved event names', () => {
  test.each([
    'email.sent',
    'email.anything',
    'contact.subscribed',
    'contact.unsubscribed',
    'segment.vip-users.entry',
    'segment.vip.exit',
  ])('%s is reserved', (name) => expect(isReservedEventName(name)).toBe(true));
  test.each(['signup', 'contact.created', 'segment.vip', 'emails', 'order.email.sent'])('%s can be tracked', (name) => {
    expect(isReservedEventName(name)).toBe(false);
  });
  test('a reserved name is a 422 with field code reserved_event', () => {
    try {
      checkTrackableEventName('email.open');
      throw new Error('expected a throw');
    } catch (err) {
      expect((err as AppError).status).toBe(422);
      expect((err as AppError).errors?.[0]).toMatchObject({ field: 'event', code: 'reserved_event' });
    }
  });
});
