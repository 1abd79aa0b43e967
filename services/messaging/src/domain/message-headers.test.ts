import { composeHeaders, unsubscribeMailto } from './message-headers.js';

const unsubscribe = { httpsUrl: 'https://p.example/unsubscribe/T', mailto: unsubscribeMailto('acme.com', 'T') };

describe('platform headers', () => {
  test('MARKETING mail advertises RFC 8058 one-click unsubscribe with https and mailto', () => {
    const h = composeHeaders({ type: 'MARKETING', bodyHasUnsubscribeLink: false, unsubscribe, emailId: 'e1' });
    expect(h['List-Unsubscribe']).toBe(
      '<https://p.example/unsubscribe/T>, <mailto:unsubscribe@acme.com?subject=unsubscribe%20T>',
    );
    expect(h['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
    expect(h.Precedence).toBe('bulk');
  });

  test('transactional mail has no List-Unsubscribe unless its body links to the unsubscribe URL', () => {
    expect(
      composeHeaders({ type: 'TRANSACTIONAL', bodyHasUnsubscribeLink: false, unsubscribe, emailId: 'e1' })[
        'List-Unsubscribe'
      ],
    ).toBeUndefined();
    expect(
      composeHeaders({ type: 'TRANSACTIONAL', bodyHasUnsubscribeLink: true, unsubscribe, emailId: 'e1' })[
        'List-Unsubscribe-Post'
      ],
    ).toBe('List-Unsubscribe=One-Click');
  });

  test('workflow mail is Auto-Submitted: auto-generated (RFC 3834), without the bulk Precedence', () => {
    const h = composeHeaders({
      type: 'TRANSACTIONAL',
      bodyHasUnsubscribeLink: false,
      unsubscribe,
      emailId: 'e1',
      automatic: true,
    });
    expect(h['Auto-Submitted']).toBe('auto-generated');
    expect(h.Precedence).toBeUndefined();
    const plain = composeHeaders({ type: 'TRANSACTIONAL', bodyHasUnsubscribeLink: false, unsubscribe, emailId: 'e1' });
    expect(plain['Auto-Submitted']).toBeUndefined();
  });

  test('caller headers are kept', () => {
    expect(
      composeHeaders({
        type: 'HEADLESS',
        bodyHasUnsubscribeLink: false,
        unsubscribe,
        emailId: 'e1',
        custom: { 'X-Tag': 'a' },
      }),
    ).toEqual({ 'X-Email-Id': 'e1', 'X-Tag': 'a' });
  });

  test('platform headers come last: a reserved caller header in any case never replaces them', () => {
    const custom = { 'x-email-id': 'forged', PRECEDENCE: 'list', Received: 'from evil', 'X-Tag': 'a' };
    const h = composeHeaders({ type: 'MARKETING', bodyHasUnsubscribeLink: false, unsubscribe, emailId: 'e1', custom });
    expect(Object.entries(h).filter(([name]) => /^(x-email-id|precedence|received)$/i.test(name))).toEqual([
      ['Precedence', 'bulk'],
      ['X-Email-Id', 'e1'],
    ]);
    expect(Object.keys(h)[0]).toBe('X-Tag');
  });

  test('the mailto subject is the URI-encoded "unsubscribe <token>", whatever the token holds', () => {
    for (const token of ['eyJhIjoiYiJ9.AbC-d_e', "a!~*'()z", 'a b/c?d&e=f', 'é€', ''])
      expect(unsubscribeMailto('acme.com', token)).toBe(
        `mailto:unsubscribe@acme.com?subject=${encodeURIComponent(`unsubscribe ${token}`)}`,
      );
  });
});
