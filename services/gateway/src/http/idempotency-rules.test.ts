import { AppError } from '@svc/lib/errors';
import { checkIdempotencyKey, decide, fingerprint, stillInProgress } from './idempotency-rules.js';

const record = { fingerprint: 'f1', method: 'POST', path: '/v1/track', startedAt: '2026-01-01T00:00:00.000Z' };

describe('idempotency rules', () => {
  test('keys are 1 to 255 printable ASCII characters', () => {
    expect(() => checkIdempotencyKey('order-123')).not.toThrow();
    expect(() => checkIdempotencyKey('x'.repeat(255))).not.toThrow();
    expect(() => checkIdempotencyKey('')).toThrow(AppError);
    expect(() => checkIdempotencyKey('x'.repeat(256))).toThrow(AppError);
    expect(() => checkIdempotencyKey('tab\there')).toThrow(AppError);
    expect(() => checkIdempotencyKey('héllo')).toThrow(AppError);
  });

  test('the same request has the same fingerprint whatever the key order', () => {
    expect(fingerprint('post', '/v1/track', { a: 1, b: { c: 2, d: 3 } })).toBe(
      fingerprint('POST', '/v1/track', { b: { d: 3, c: 2 }, a: 1 }),
    );
    expect(fingerprint('POST', '/v1/track', { a: 1 })).not.toBe(fingerprint('POST', '/v1/track', { a: 2 }));
    expect(fingerprint('POST', '/v1/track', { a: 1 })).not.toBe(fingerprint('POST', '/v1/send', { a: 1 }));
  });

  test('a different request with a used key is IDEMPOTENCY_KEY_REUSED with the original request details', () => {
    const done = { ...record, response: { status: 200, body: '{}' } };
    try {
      decide('k1', done, 'other');
      throw new Error('expected a throw');
    } catch (err) {
      const e = err as AppError;
      expect(e.status).toBe(409);
      expect(e.code).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(e.details).toEqual({
        key: 'k1',
        originalRequest: { method: 'POST', path: '/v1/track' },
        originalRequestAt: '2026-01-01T00:00:00.000Z',
        originalStatusCode: 200,
      });
    }
  });

  test('the same request replays a finished answer; any request waits for an unfinished one', () => {
    expect(decide('k', { ...record, response: { status: 200, body: '{}' } }, 'f1').action).toBe('replay');
    expect(decide('k', record, 'f1').action).toBe('wait');
    expect(decide('k', record, 'other').action).toBe('wait');
  });

  test('a wait that ends unanswered: another request is IDEMPOTENCY_KEY_REUSED, the same one a plain conflict', () => {
    expect(stillInProgress('k', record, 'other')).toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSED',
      details: { key: 'k', originalStatusCode: null },
    });
    expect(stillInProgress('k', record, 'f1')).toMatchObject({ status: 409, code: 'CONFLICT' });
  });
});
