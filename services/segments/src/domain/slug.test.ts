import { freeSlug, slugify } from './slug.js';

describe('segment slugs', () => {
  it('lower-cases, turns spaces into dashes and drops other non-word characters', () => {
    expect(slugify('VIP Users')).toBe('vip-users');
    expect(slugify('  Paid  (EU) users! ')).toBe('paid-eu-users');
    expect(slugify('a.b.c')).toBe('abc');
  });

  it('gives a name without word characters the slug "segment"', () => {
    expect(slugify('!!!')).toBe('segment');
    expect(slugify('---')).toBe('segment');
  });

  it('numbers a slug the project already uses', () => {
    expect(freeSlug('vip', [])).toBe('vip');
    expect(freeSlug('vip', ['vip'])).toBe('vip-2');
    expect(freeSlug('vip', ['vip', 'vip-2', 'vip-3'])).toBe('vip-4');
  });
});
