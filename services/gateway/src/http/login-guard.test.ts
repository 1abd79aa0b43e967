import { AppError } from '@svc/lib/errors';
import { MemoryRateLimiter } from '@svc/lib/rate-limit';
import { MemoryTokenBuckets } from '@svc/lib/token-bucket';
import { LoginGuard } from './login-guard.js';

const HOUR = 3_600_000;
const wrong = () => Promise.reject(new AppError({ code: 'INVALID_CREDENTIALS', status: 401, message: 'no' }));
const right = () => Promise.resolve('session');
const guard = (failuresPerClient: number, failuresPerAccount: number) =>
  new LoginGuard(new MemoryRateLimiter(), new MemoryTokenBuckets(), {
    failuresPerClient,
    failuresPerAccount,
    windowMs: HOUR,
  });
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: AppError) => e.code,
  );

describe('login guard', () => {
  test('one client spraying many accounts is refused once its failures are spent, identity not asked', async () => {
    const g = guard(3, 100);
    for (let i = 0; i < 3; i++)
      expect(await outcome(g.attempt('198.51.100.1', `u${i}@x.com`, wrong))).toBe('INVALID_CREDENTIALS');
    let asked = false;
    const err = await g.attempt('198.51.100.1', 'u9@x.com', async () => (asked = true)).catch((e: AppError) => e);
    expect(err).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', status: 429 });
    expect((err as AppError).details?.retryAfter).toBeGreaterThan(1000); // one failure of 3 an hour: 20 min
    expect(asked).toBe(false);
    expect(await outcome(g.attempt('198.51.100.2', 'u9@x.com', right))).toBe('ok');
  });

  test('successes and non-credential errors spend no failure budget', async () => {
    const g = guard(2, 2);
    const down = () => Promise.reject(new AppError({ code: 'SERVICE_UNAVAILABLE', status: 503, message: 'down' }));
    for (let i = 0; i < 20; i++) {
      expect(await outcome(g.attempt('198.51.100.1', `u${i % 5}@x.com`, i % 2 ? right : down))).toMatch(
        /^(ok|SERVICE_UNAVAILABLE)$/,
      );
    }
    expect(await outcome(g.attempt('198.51.100.1', 'u1@x.com', wrong))).toBe('INVALID_CREDENTIALS');
  });

  test('a spent account budget slows the account: a client that has not failed against it still signs in', async () => {
    const g = guard(100, 3);
    for (let i = 0; i < 3; i++) await outcome(g.attempt(`203.0.113.${i}`, 'owner@x.com', wrong));
    // Each attacker client already failed against the account: refused without a guess.
    for (let i = 0; i < 3; i++)
      expect(await outcome(g.attempt(`203.0.113.${i}`, 'owner@x.com', right))).toBe('RATE_LIMIT_EXCEEDED');
    // A fresh client gets one guess; having failed, it waits too.
    expect(await outcome(g.attempt('203.0.113.50', 'owner@x.com', wrong))).toBe('INVALID_CREDENTIALS');
    expect(await outcome(g.attempt('203.0.113.50', 'owner@x.com', right))).toBe('RATE_LIMIT_EXCEEDED');
    // The owner, from a client with no failure, signs in (again and again: success spends nothing).
    for (let i = 0; i < 3; i++) expect(await outcome(g.attempt('198.51.100.7', 'OWNER@x.com ', right))).toBe('ok');
    // Other accounts are untouched.
    expect(await outcome(g.attempt('203.0.113.0', 'other@x.com', right))).toBe('ok');
  });

  test('concurrent guesses cannot overshoot a budget', async () => {
    const g = guard(5, 100);
    const slowWrong = () => new Promise<never>((_, reject) => setTimeout(() => reject(wrongError), 5));
    const wrongError = new AppError({ code: 'INVALID_CREDENTIALS', status: 401, message: 'no' });
    const all = await Promise.all(
      Array.from({ length: 9 }, (_, i) => outcome(g.attempt('198.51.100.1', `c${i}@x.com`, slowWrong))),
    );
    expect(all.filter((o) => o === 'INVALID_CREDENTIALS')).toHaveLength(5);
    expect(all.filter((o) => o === 'RATE_LIMIT_EXCEEDED')).toHaveLength(4);
  });

  test('every address of one IPv6 /64 is one client', async () => {
    const g = guard(2, 100);
    await outcome(g.attempt('2001:db8:0:1::1', 'a@x.com', wrong));
    await outcome(g.attempt('2001:db8:0:1::2', 'b@x.com', wrong));
    expect(await outcome(g.attempt('2001:db8:0:1:ffff::9', 'c@x.com', wrong))).toBe('RATE_LIMIT_EXCEEDED');
    expect(await outcome(g.attempt('2001:db8:0:2::1', 'c@x.com', wrong))).toBe('INVALID_CREDENTIALS');
  });
});
