import { generateKey, hashKey, kindOfKey } from './api-keys.js';
import { hashPassword, verifyPassword } from './passwords.js';

describe('credentials', () => {
  test('a password verifies against its hash and nothing else', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored.startsWith('scrypt$')).toBe(true);
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    expect(await verifyPassword('wrong horse', stored)).toBe(false);
  });

  test('keys carry their type prefix and are stored as hashes with a short display prefix', () => {
    const sk = generateKey('secret');
    const pk = generateKey('public');
    expect(sk.key.startsWith('sk_')).toBe(true);
    expect(pk.key.startsWith('pk_')).toBe(true);
    expect(sk.hash).toBe(hashKey(sk.key));
    expect(sk.hash).not.toContain(sk.key);
    expect(sk.prefix).toBe(sk.key.slice(0, 10));
    expect(kindOfKey(sk.key)).toBe('secret');
    expect(kindOfKey('xx_1')).toBeNull();
  });
});
