import { classifyFailure, retryDelay } from './delivery-outcome.js';

const opts = { maxAttempts: 4, retryBaseMs: 1000 };

describe('SMTP outcomes', () => {
  test('a 5xx answer is a permanent failure (bounce) with the server text as reason', () => {
    expect(classifyFailure({ responseCode: 550, response: '550 5.1.1 No such user' }, 1, opts)).toEqual({
      kind: 'bounce',
      reason: '550 5.1.1 No such user',
    });
  });

  test('a 4xx answer or a connection failure is retried with exponential backoff', () => {
    const first = classifyFailure({ responseCode: 451, response: '451 try later' }, 1, opts);
    expect(first).toMatchObject({ kind: 'retry', reason: '451 try later' });
    const later = classifyFailure({ code: 'ECONNECTION', message: 'connect ECONNREFUSED' }, 3, opts);
    expect(later).toMatchObject({ kind: 'retry' });
    expect(retryDelay(1, 1000, () => 0.5)).toBe(1000);
    expect(retryDelay(3, 1000, () => 0.5)).toBe(4000);
    expect(retryDelay(30, 1000, () => 0.5)).toBe(3600_000);
  });

  test('after the last attempt a temporary failure gives up', () => {
    expect(classifyFailure({ responseCode: 421 }, 4, opts)).toMatchObject({
      kind: 'failed',
      reason: expect.stringMatching(/gave up after 4 attempts/),
    });
  });
});
