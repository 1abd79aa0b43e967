import { createHmac } from 'node:crypto';
import { subscriptionUrls, TrackingTokens } from './tracking-tokens.js';

const tokens = new TrackingTokens('secret-a');

describe('tracking tokens', () => {
  test('a signed token verifies to its payload', () => {
    const token = tokens.sign('click', { emailId: 'e1', url: 'https://example.com/x?y=1' });
    expect(tokens.verify('click', token)).toEqual({ emailId: 'e1', url: 'https://example.com/x?y=1' });
    const open = tokens.sign('open', { emailId: 'e1', iat: 1_790_000_000 });
    expect(tokens.verify('open', open)).toEqual({ emailId: 'e1', iat: 1_790_000_000 });
  });

  test('the issue time is signed: a token made younger is refused', () => {
    const [body, mac] = tokens.sign('open', { emailId: 'e1', iat: 1_700_000_000 }).split('.');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
    const younger = Buffer.from(JSON.stringify({ ...payload, iat: 1_790_000_000 })).toString('base64url');
    expect(tokens.verify('open', `${younger}.${mac}`)).toBeNull();
  });

  test('a token of another kind, another key, a changed payload or garbage is refused', () => {
    const open = tokens.sign('open', { emailId: 'e1' });
    expect(tokens.verify('subscription', open)).toBeNull();
    expect(new TrackingTokens('secret-b').verify('open', open)).toBeNull();
    const [, mac] = open.split('.');
    const other = Buffer.from(JSON.stringify({ emailId: 'e2' })).toString('base64url');
    expect(tokens.verify('open', `${other}.${mac}`)).toBeNull();
    for (const bad of ['', '.', 'abc', 'abc.def', `${open}x`]) expect(tokens.verify('open', bad)).toBeNull();
  });

  test('the MAC is HMAC-SHA256 of the kind and payload, for short, block-sized and long secrets', () => {
    for (const secret of ['secret-a', 'k'.repeat(64), 'long-'.repeat(40), 'clé-ü']) {
      const token = new TrackingTokens(secret).sign('subscription', { projectId: 'p', contactId: 'c', emailId: 'e' });
      const [body, mac] = token.split('.');
      const expected = createHmac('sha256', secret).update(`s.${body}`).digest().subarray(0, 16).toString('base64url');
      expect(mac).toBe(expected);
    }
  });

  test('the MAC is HMAC-SHA256 for short and long payloads, and a long token still verifies', () => {
    for (const length of [1, 3_000, 9_000, 30_000]) {
      const url = `https://example.com/${'é'.repeat(length)}`;
      const token = tokens.sign('click', { emailId: 'e1', url });
      const [body, mac] = token.split('.');
      const expected = createHmac('sha256', 'secret-a')
        .update(`c.${body}`)
        .digest()
        .subarray(0, 16)
        .toString('base64url');
      expect(mac).toBe(expected);
      if (token.length <= 8192) expect(tokens.verify('click', token)).toEqual({ emailId: 'e1', url });
    }
  });

  test('subscription URLs are the reserved template variables', () => {
    expect(subscriptionUrls('https://p.example', 'T')).toEqual({
      unsubscribeUrl: 'https://p.example/unsubscribe/T',
      subscribeUrl: 'https://p.example/subscribe/T',
      manageUrl: 'https://p.example/manage/T',
    });
  });
});
