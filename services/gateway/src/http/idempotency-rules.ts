import { createHash } from 'node:crypto';
import { type AppError, conflict, validationError } from '@svc/lib/errors';
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

/**
 * What to do with a request whose key is already taken. A different request waits too while the first one runs:
 * its 409 names the first one's status code (SPEC.md: an integer), and a first one that fails with a 5xx frees the
 * key as it would for a request arriving afterwards.
 */
export function decide(key: string, existing: IdempotencyRecord, requestFingerprint: string): Decision {
  if (!existing.response) return { action: 'wait' };
  if (existing.fingerprint !== requestFingerprint) {
    throw idempotencyKeyReused(key, { ...existing, status: existing.response.status });
  }
  return { action: 'replay', record: existing };
}

/** The 409 for a request still waiting when the wait ends: IDEMPOTENCY_KEY_REUSED when it is another request. */
export function stillInProgress(key: string, existing: IdempotencyRecord, requestFingerprint: string): AppError {
  if (existing.fingerprint !== requestFingerprint) return idempotencyKeyReused(key, { ...existing, status: null });
  return conflict('A request with this Idempotency-Key is still in progress', { key });
}
