import { parseWebhookPayload } from './provider-webhooks.js';

describe('provider webhook payloads', () => {
  test('one notification or a batch; type aliases; hard bounce by default', () => {
    expect(parseWebhookPayload({ type: 'Bounced', emailId: 'x' })).toEqual([{ type: 'bounce', emailId: 'x', bounceType: 'hard' }]);
    expect(parseWebhookPayload({ events: [{ type: 'delivered', messageId: '<m@x>' }, { type: 'spam', messageId: 'm@x' }] }).map((n) => n.type)).toEqual(['delivery', 'complaint']);
  });

  test('an unknown type or a notification naming no email is a 422', () => {
    expect(() => parseWebhookPayload({ type: 'open', emailId: 'x' })).toThrow(expect.objectContaining({ status: 422 }));
    expect(() => parseWebhookPayload({ type: 'bounce' })).toThrow(expect.objectContaining({ status: 422 }));
    expect(() => parseWebhookPayload({ events: [] })).toThrow(expect.objectContaining({ status: 422 }));
  });
});
