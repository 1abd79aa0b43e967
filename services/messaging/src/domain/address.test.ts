import { AppError } from '@svc/lib/errors';
import { domainOf, formatAddress, isValidEmail, parseAddress } from './address.js';

function fieldErrorsOf(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(422);
    return (err as AppError).errors ?? [];
  }
  throw new Error('expected a throw');
}

describe('address', () => {
  test('a sender or recipient may be a bare email string', () => {
    expect(parseAddress('a@b.com')).toEqual({ email: 'a@b.com' });
  });

  test('a sender or recipient may be "Name <email>"', () => {
    expect(parseAddress('Ann Lee <ann@example.com>')).toEqual({ name: 'Ann Lee', email: 'ann@example.com' });
    expect(parseAddress('"Lee, Ann" <ann@example.com>')).toEqual({ name: 'Lee, Ann', email: 'ann@example.com' });
    expect(parseAddress('<ann@example.com>')).toEqual({ email: 'ann@example.com' });
  });

  test('a sender or recipient may be an object {name, email}', () => {
    expect(parseAddress({ name: 'Ann', email: 'ann@example.com' })).toEqual({ name: 'Ann', email: 'ann@example.com' });
    expect(parseAddress({ email: 'ann@example.com' })).toEqual({ email: 'ann@example.com' });
  });

  test('line breaks anywhere are rejected (header injection)', () => {
    expect(fieldErrorsOf(() => parseAddress('a@b.com\r\nBcc: x@y.com', 'from'))).toEqual([
      expect.objectContaining({ field: 'from', code: 'invalid_string' }),
    ]);
    expect(fieldErrorsOf(() => parseAddress({ name: 'Ann\nBcc: x@y.com', email: 'a@b.com' }, 'from'))).toEqual([
      expect.objectContaining({ field: 'from.name', code: 'invalid_string' }),
    ]);
    expect(fieldErrorsOf(() => parseAddress('Ann\r <a@b.com>'))).toHaveLength(1);
  });

  test('invalid emails are rejected on the email sub-field of the object form', () => {
    expect(fieldErrorsOf(() => parseAddress({ name: 'Ann', email: 'nope' }, 'to'))).toEqual([
      { field: 'to.email', code: 'invalid_string', message: 'Invalid email' },
    ]);
    expect(fieldErrorsOf(() => parseAddress({ name: 'Ann' }, 'to'))).toEqual([
      expect.objectContaining({ field: 'to.email', message: 'Required' }),
    ]);
    expect(fieldErrorsOf(() => parseAddress(42, 'to'))).toEqual([
      expect.objectContaining({ field: 'to', code: 'invalid_type' }),
    ]);
  });

  test('names longer than 200 characters are rejected', () => {
    expect(parseAddress({ name: 'x'.repeat(200), email: 'a@b.com' }).name).toHaveLength(200);
    expect(fieldErrorsOf(() => parseAddress({ name: 'x'.repeat(201), email: 'a@b.com' }, 'from'))).toEqual([
      expect.objectContaining({ field: 'from.name', code: 'too_big' }),
    ]);
  });

  test('email syntax: dot-atom local part, dotted domain with a real TLD', () => {
    for (const ok of ['a@b.co', 'first.last+tag@sub.example.org', "o'brien@example.ie", 'x@xn--mnchen-3ya.de']) {
      expect(isValidEmail(ok)).toBe(true);
    }
    for (const bad of [
      '',
      'plain',
      '@b.com',
      'a@',
      'a@b',
      'a..b@c.com',
      '.a@c.com',
      'a.@c.com',
      'a@-b.com',
      'a@b.c',
      'a b@c.com',
      'a@b.com.',
      `${'x'.repeat(65)}@b.com`,
    ]) {
      expect(isValidEmail(bad)).toBe(false);
    }
  });

  test('domainOf lower-cases the domain part', () => {
    expect(domainOf('Ann@Example.COM')).toBe('example.com');
  });

  test('formatAddress gives nodemailer its object form so it does the quoting', () => {
    expect(formatAddress({ name: 'Lee, "Ann"', email: 'a@b.com' })).toEqual({ name: 'Lee, "Ann"', address: 'a@b.com' });
    expect(formatAddress({ email: 'a@b.com' })).toEqual({ name: '', address: 'a@b.com' });
  });
});
