import type { AppError } from '@svc/lib/errors';
import { parseWebhookPayload } from './provider-webhooks.js';

describe('provider webhook payloads', () => {
  test('one notification or a batch; type aliases; hard bounce by default', () => {
    expect(parseWebhookPayload([{ type: 'Bounced', emailId: 'x' }])).toEqual([
      { type: 'bounce', emailId: 'x', bounceType: 'hard' },
    ]);
    const batch = [
      { type: 'delivered', messageId: '<m@x>' },
      { type: 'spam', messageId: 'm@x' },
    ];
    expect(parseWebhookPayload(batch).map((n) => n.type)).toEqual(['delivery', 'complaint']);
  });

  test('an unknown type, a notification naming no email or an empty batch is a 422 naming the field', () => {
    const fieldsOf = (events: Parameters<typeof parseWebhookPayload>[0]) => {
      try {
        parseWebhookPayload(events);
      } catch (err) {
        return (err as AppError).errors?.map((e) => e.field);
      }
      throw new Error('expected a 422');
    };
    expect(fieldsOf([{ type: 'open', emailId: 'x' }])).toEqual(['events.0.type']);
    // Names of Object.prototype's members are unknown types too (constructor was taken for a complaint).
    for (const type of ['constructor', 'Constructor', '__proto__', 'hasOwnProperty'])
      expect(fieldsOf([{ type, emailId: 'x' }])).toEqual(['events.0.type']);
    expect(fieldsOf([{ emailId: 'x' }, { type: 'bounce' }])).toEqual(['events.0.type', 'events.1.emailId']);
    expect(fieldsOf([])).toEqual(['events']);
  });
});
