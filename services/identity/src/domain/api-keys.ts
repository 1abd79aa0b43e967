import { createHash, randomBytes } from 'node:crypto';

export type KeyKind = 'secret' | 'public';

export interface GeneratedKey {
  key: string;
  hash: string;
  prefix: string;
}

const PREFIX: Record<KeyKind, string> = { secret: 'sk_', public: 'pk_' };

/** Keys are stored only as SHA-256 hashes (they carry 256 bits, so no slow hash is needed). */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function generateKey(kind: KeyKind): GeneratedKey {
  const key = PREFIX[kind] + randomBytes(32).toString('base64url');
  return { key, hash: hashKey(key), prefix: key.slice(0, 10) };
}

export function kindOfKey(key: string): KeyKind | null {
  if (key.startsWith('sk_')) return 'secret';
  if (key.startsWith('pk_')) return 'public';
  return null;
}

export function generateSessionToken(): GeneratedKey {
  const key = randomBytes(32).toString('base64url');
  return { key, hash: hashKey(key), prefix: '' };
}
