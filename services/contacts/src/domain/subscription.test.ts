import { nextSubscription, subscriptionEvent } from './subscription.js';

describe('contact subscription rules', () => {
  test('new contacts take the requested value, else the endpoint default', () => {
    expect(nextSubscription(undefined, undefined, true, 'set')).toBe(true);
    expect(nextSubscription(undefined, undefined, false, 'set')).toBe(false);
    expect(nextSubscription(undefined, false, true, 'track')).toBe(false);
  });
  test('omitting subscribed preserves an existing contact state', () => {
    expect(nextSubscription(false, undefined, true, 'track')).toBe(false);
    expect(nextSubscription(true, undefined, false, 'set')).toBe(true);
  });
  test('false on /v1/track does not resubscribe and does not unsubscribe', () => {
    expect(nextSubscription(false, false, true, 'track')).toBe(false);
    expect(nextSubscription(true, false, true, 'track')).toBe(true);
    expect(nextSubscription(false, true, true, 'track')).toBe(true);
  });
  test('set writes apply the requested value', () => {
    expect(nextSubscription(true, false, false, 'set')).toBe(false);
  });
  test('only a flip emits contact.subscribed or contact.unsubscribed', () => {
    expect(subscriptionEvent(true, false)).toBe('contact.unsubscribed');
    expect(subscriptionEvent(false, true)).toBe('contact.subscribed');
    expect(subscriptionEvent(true, true)).toBeNull();
    expect(subscriptionEvent(undefined, true)).toBeNull();
  });
});
