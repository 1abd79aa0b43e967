import { composeHeaders, unsubscribeMailto } from './message-headers.js';

const unsubscribe = { httpsUrl: 'https://p.example/unsubscribe/T', mailto: unsubscribeMailto('acme.com', 'T') };

describe('platform headers', () => {
  test('MARKETING mail advertises RFC 8058 one-click unsubscribe with https and mailto', () => {
    const h = composeHeaders({ type: 'MARKETING', bodyHasUnsubscribeLink: false, unsubscribe, emailId: 'e1' });
    expect(h['List-Unsubscribe']).toBe('<https://p.example/unsubscribe/T>, <mailto:unsubscribe@acme.com?subject=unsubscribe%20T>');
    expect(h['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
    expect(h.Precedence).toBe('bulk');
  });

  test('transactional mail has no List-Unsubscribe unless its body links to the unsubscribe URL', () => {
    expect(composeHeaders({ type: 'TRANSACTIONAL', bodyHasUnsubscribeLink: false, unsubscribe, emailId: 'e1' })['List-Unsubscribe']).toBeUndefined();
    expect(composeHeaders({ type: 'TRANSACTIONAL', bodyHasUnsubscribeLink: true, unsubscribe, emailId: 'e1' })['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
  });

  test('caller headers are kept', () => {
    expect(composeHeaders({ type: 'HEADLESS', bodyHasUnsubscribeLink: false, unsubscribe, emailId: 'e1', custom: { 'X-Tag': 'a' } })).toEqual({ 'X-Email-Id': 'e1', 'X-Tag': 'a' });
  });
});
