import { isValidEmail, normalizeEmailKey } from './email-address.js';

describe('isValidEmail', () => {
  test('accepts local@domain.tld addresses, including plus addressing and subdomains', () => {
    for (const s of [
      'ada@example.com',
      'ada.lovelace+news@mail.example.co.uk',
      "o'brien@example.ie",
      'x@xn--bcher-kva.xn--p1ai',
    ]) {
      expect(isValidEmail(s)).toBe(true);
    }
  });

  test('rejects addresses without a domain, a TLD, or with spaces, CR or LF', () => {
    for (const s of [
      '',
      'ada',
      'ada@',
      '@example.com',
      'ada@example',
      'ada @example.com',
      'ada@example.com\r\n',
      'ada@exa mple.com',
      'a..b@example.com',
      '.a@example.com',
      'a@-example.com',
      'a@example.c',
    ]) {
      expect(isValidEmail(s)).toBe(false);
    }
  });

  test('rejects addresses longer than 254 characters or a local part over 64', () => {
    const domain = `${'d'.repeat(60)}.${'e'.repeat(60)}.${'f'.repeat(60)}.com`;
    expect(isValidEmail(`${'a'.repeat(64)}@${domain}`)).toBe(true);
    expect(isValidEmail(`${'a'.repeat(65)}@example.com`)).toBe(false);
    expect(isValidEmail(`${'a'.repeat(64)}@${'d'.repeat(60)}.${domain}`)).toBe(false);
  });
});

describe('normalizeEmailKey', () => {
  test('email is unique per project regardless of case and surrounding spaces', () => {
    expect(normalizeEmailKey('  Ada@Example.COM ')).toBe('ada@example.com');
  });
});
