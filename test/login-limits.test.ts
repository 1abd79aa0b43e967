import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { type Answer, call, expectEnvelope, platform, signUp, uniqueEmail } from './support/client.js';
import { PrivateRedis } from './support/private-redis.js';
import { freePort, httpOk, startPlatform, stopProcess, waitFor } from './support/processes.js';

/**
 * Password spraying and sign-up limits (README "Login throttle"), through two gateways of our own with low
 * limits and a Redis of our own: `proxied` believes X-Forwarded-For from loopback (TRUST_PROXY), so a test can
 * speak for many clients; `direct` trusts no proxy, so every request is 127.0.0.1 whatever it forges. Accounts
 * are opened through the suite's shared gateway, whose limits are high.
 */
const LIMITS = {
  LOGIN_FAILURES_PER_CLIENT: '4',
  LOGIN_FAILURES_PER_ACCOUNT: '6',
  // An hour: no budget refills while the tests run.
  LOGIN_FAILURE_WINDOW_SECONDS: '3600',
  SIGNUPS_PER_HOUR: '3',
};
const THROTTLED = [429, 'RATE_LIMIT_EXCEEDED'] as const;
const SPRAYED = 'Winter2026!';
const redis = await PrivateRedis.create();
const children: ChildProcess[] = [];
let proxied: string;
let direct: string;

async function gateway(name: string, own: Record<string, string>): Promise<string> {
  const port = await freePort();
  const env = { ...platform.env, ...LIMITS, ...own, REDIS_URL: redis.url, PORT: String(port) };
  const child = startPlatform(['gateway'], env, name);
  children.push(child);
  const baseUrl = `http://127.0.0.1:${port}`;
  // Ready, not just live: attempts counted before Redis connects would go to the in-process fallback.
  await waitFor(name, () => httpOk(`${baseUrl}/readyz`), child);
  return baseUrl;
}

const login = (baseUrl: string, email: string, password: string, client?: string) =>
  call('POST', '/auth/login', { email, password }, { baseUrl, headers: client ? { 'x-forwarded-for': client } : {} });

function expectRetryAfter(res: Answer): void {
  expectEnvelope(res, ...THROTTLED);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(res.body.error.details.retryAfter).toBe(Number(res.headers.get('retry-after')));
}

beforeAll(async () => {
  await redis.start();
  [proxied, direct] = await Promise.all([
    gateway('gateway-login-limits-proxied', { TRUST_PROXY: 'loopback' }),
    gateway('gateway-login-limits-direct', {}),
  ]);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(children.map((c) => stopProcess(c)));
  await redis.kill();
});

describe('login limits across accounts and clients', () => {
  test('a client spraying one password over many addresses stops at LOGIN_FAILURES_PER_CLIENT failures', async () => {
    const victim = uniqueEmail('victim');
    await signUp(victim, 'right-password');
    const sprayer = '198.51.100.20';
    for (let i = 0; i < 4; i++) {
      expectEnvelope(await login(proxied, uniqueEmail('target'), SPRAYED, sprayer), 401, 'INVALID_CREDENTIALS');
    }
    // Spent: refused before the password is checked, even a right one.
    expectRetryAfter(await login(proxied, victim, 'right-password', sprayer));
    expectRetryAfter(await login(proxied, uniqueEmail('target'), SPRAYED, sprayer));
    // Other clients keep their own budgets; a success spends none.
    for (let i = 0; i < 6; i++)
      expect((await login(proxied, victim, 'right-password', '198.51.100.21')).status).toBe(200);
    expectEnvelope(await login(proxied, uniqueEmail('target'), SPRAYED, '198.51.100.21'), 401, 'INVALID_CREDENTIALS');
    // The budgets live in Redis, shared by every gateway replica, under the deployment's prefix.
    const inspect = new Redis(redis.url);
    try {
      const bucket = await inspect.hget(`${platform.env.BUS_PREFIX}:login:client:${sprayer}`, 't');
      expect(Number(bucket)).toBeLessThan(1);
    } finally {
      inspect.disconnect();
    }
  });

  test('many clients against one address slow it, never lock it: a client that has not failed signs in', async () => {
    const owner = uniqueEmail('owner');
    await signUp(owner, 'right-password');
    const attackers = Array.from({ length: 6 }, (_, i) => `203.0.113.${i + 1}`);
    for (const a of attackers) expectEnvelope(await login(proxied, owner, SPRAYED, a), 401, 'INVALID_CREDENTIALS');
    // The account's budget is spent: a client that failed against it is refused, even with the right password.
    expectRetryAfter(await login(proxied, owner, 'right-password', attackers[0]));
    // A fresh client gets one guess; then it waits too.
    expectEnvelope(await login(proxied, owner, SPRAYED, '203.0.113.50'), 401, 'INVALID_CREDENTIALS');
    expectRetryAfter(await login(proxied, owner, SPRAYED, '203.0.113.50'));
    // The owner, from a client with no failure against the account, signs in (as often as they like).
    for (let i = 0; i < 3; i++)
      expect((await login(proxied, owner, 'right-password', '198.51.100.30')).status).toBe(200);
    // Another account is untouched, also for the attacking clients.
    const other = uniqueEmail('other');
    await signUp(other, 'right-password');
    expect((await login(proxied, other, 'right-password', attackers[1])).status).toBe(200);
  });

  test('without TRUST_PROXY a forged X-Forwarded-For buys a sprayer no fresh budget', async () => {
    for (let i = 0; i < 4; i++) {
      const forged = `192.0.2.${i + 1}`;
      expectEnvelope(await login(direct, uniqueEmail('target'), SPRAYED, forged), 401, 'INVALID_CREDENTIALS');
    }
    expectRetryAfter(await login(direct, uniqueEmail('target'), SPRAYED, '192.0.2.99'));
  });
});

describe('sign-up limit', () => {
  test('SIGNUPS_PER_HOUR per client, then a 429 envelope with Retry-After; forged forwarding buys none', async () => {
    const signup = (baseUrl: string, headers: Record<string, string> = {}) =>
      call('POST', '/auth/signup', { email: uniqueEmail('signup'), password: 'password-123' }, { baseUrl, headers });
    // A refused attempt counts too (a 409 tells whether an address has an account).
    const taken = uniqueEmail('taken');
    await signUp(taken);
    expectEnvelope(
      await call('POST', '/auth/signup', { email: taken, password: 'password-123' }, { baseUrl: direct }),
      409,
      'CONFLICT',
    );
    for (let i = 0; i < 2; i++)
      expect((await signup(direct, { 'x-forwarded-for': `192.0.2.${i + 1}` })).status).toBe(201);
    const refused = await signup(direct, { 'x-forwarded-for': '192.0.2.77' });
    expectRetryAfter(refused);
    expect(refused.body.error.details.limit).toBe(3);
    // Behind a trusted proxy each client has its own budget.
    for (let i = 0; i < 3; i++)
      expect((await signup(proxied, { 'x-forwarded-for': '198.51.100.40' })).status).toBe(201);
    expectRetryAfter(await signup(proxied, { 'x-forwarded-for': '198.51.100.40' }));
    expect((await signup(proxied, { 'x-forwarded-for': '198.51.100.41' })).status).toBe(201);
  });
});

describe('Redis down', () => {
  test('the login and sign-up limits are counted in-process: 401 and 429, never a 5xx', async () => {
    const owner = uniqueEmail('redis-down');
    await signUp(owner, 'right-password');
    await redis.kill();
    const sprayer = '198.51.100.60';
    for (let i = 0; i < 4; i++) {
      expectEnvelope(await login(proxied, uniqueEmail('target'), SPRAYED, sprayer), 401, 'INVALID_CREDENTIALS');
    }
    expectRetryAfter(await login(proxied, owner, 'right-password', sprayer));
    expect((await login(proxied, owner, 'right-password', '198.51.100.61')).status).toBe(200);
    const signup = () =>
      call(
        'POST',
        '/auth/signup',
        { email: uniqueEmail('signup'), password: 'password-123' },
        { baseUrl: proxied, headers: { 'x-forwarded-for': '198.51.100.62' } },
      );
    for (let i = 0; i < 3; i++) expect((await signup()).status).toBe(201);
    expectRetryAfter(await signup());
  });
});
