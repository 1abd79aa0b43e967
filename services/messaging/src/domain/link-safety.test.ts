import { BlockedDomains, normalDomain, webDestination } from './link-safety.js';

describe('link safety', () => {
  test('only a plain http(s) URL without credentials is a destination the platform redirects to', () => {
    for (const ok of ['https://example.com/a?b=1#c', 'http://example.com', 'HTTPS://EXAMPLE.com/x', 'https://[::1]/']) {
      expect(webDestination(ok)?.href).toBeDefined();
    }
    for (const bad of [
      'javascript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'ftp://example.com/',
      'https://user:pass@evil.example/',
      'https://bank.example@evil.example/',
      'https://exa mple.com/',
      '//evil.example/',
      '',
    ]) {
      expect(webDestination(bad)).toBeUndefined();
    }
  });

  test('a blocked domain blocks itself and its subdomains, not names that only end alike', () => {
    const blocked = new BlockedDomains(['evil.example', 'xn--bcher-kva.de']);
    expect(blocked.blocks('evil.example')).toBe(true);
    expect(blocked.blocks('login.evil.example')).toBe(true);
    expect(blocked.blocks('a.b.evil.example.')).toBe(true);
    expect(blocked.blocks(new URL('https://Shop.Bücher.de/').hostname)).toBe(true);
    expect(blocked.blocks('notevil.example')).toBe(false);
    expect(blocked.blocks('example')).toBe(false);
    expect(new BlockedDomains([]).blocks('evil.example')).toBe(false);
  });

  test('a configured domain is spelled as a URL spells its hostname; a URL or an address is none', () => {
    expect(['Evil.Example', '*.evil.example', '.evil.example.'].map(normalDomain)).toEqual([
      'evil.example',
      'evil.example',
      'evil.example',
    ]);
    expect(normalDomain('bücher.de')).toBe('xn--bcher-kva.de');
    for (const bad of ['', 'https://evil.example/', 'a@evil.example', 'evil .example'])
      expect(normalDomain(bad)).toBe('');
  });
});
