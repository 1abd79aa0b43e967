import { createHash } from 'node:crypto';
import { validationError } from '@svc/lib/errors';
import { idempotencyKeyReused, type IdempotencyRecord } from '@svc/lib/idempotency-store';

const PRINTABLE_ASCII = /^[\x20-\x7e]{1,255}$/;

export function checkIdempotencyKey(key: string): void {
  if (!PRINTABLE_ASCII.test(key)) {
    throw validationError([
      {
        field: 'Idempotency-Key',
        message: 'Idempotency-Key must be 1 to 255 printable ASCII characters',
        code: 'invalid_string',
        received: key.length > 255 ? `${key.slice(0, 32)}…` : key,
      },
    ]);
  }
}

/** Key order in the body does not make a request different. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

export function fingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify([method.toUpperCase(), path, canonical(body ?? null)]))
    .digest('hex');
}

export type Decision = { action: 'replay'; record: IdempotencyRecord } | { action: 'wait' };

/** What to do with a request whose key is already taken. */
export function decide(key: string, existing: IdempotencyRecord, requestFingerprint: string): Decision {
  if (existing.fingerprint !== requestFingerprint) {
    throw idempotencyKeyReused(key, { ...existing, status: existing.response?.status ?? null });
  }
  return existing.response ? { action: 'replay', record: existing } : { action: 'wait' };
}
