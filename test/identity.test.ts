import { Redis } from 'ioredis';
import { call, expectEnvelope, newTenant, platform, signUp, uniqueEmail } from './support/client.js';
import type { RequestOptions } from './support/client.js';
import { freePort, httpOk, serviceReady, startPlatform, stopProcess, waitFor } from './support/processes.js';

const login = (email: string, password: string, opts?: RequestOptions) =>
  call('POST', '/auth/login', { email, password }, opts);
const THROTTLED = [429, 'RATE_LIMIT_EXCEEDED'] as const;

describe('identity through the gateway', () => {
  test('signup sets an HttpOnly session cookie and /users/@me answers the user', async () => {
    const email = uniqueEmail();
    const { cookie, userId } = await signUp(email);
    expect(cookie).toMatch(/^svc_session=/);
    const me = await call('GET', '/users/@me', undefined, { cookie });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: userId, email });
  });

  test('signup validates email and password, and a taken email is a 409', async () => {
    expectEnvelope(
      await call('POST', '/auth/signup', { email: 'nope', password: 'password-123' }),
      422,
      'VALIDATION_ERROR',
    );
    const short = await call('POST', '/auth/signup', { email: uniqueEmail(), password: 'short' });
    expectEnvelope(short, 422, 'VALIDATION_ERROR');
    expect(short.body.error.errors[0]).toMatchObject({ field: 'password' });
    expectEnvelope(
      await call('POST', '/auth/signup', { email: 42, password: 'password-123' }),
      422,
      'VALIDATION_ERROR',
    );
    const email = uniqueEmail();
    await signUp(email);
    expectEnvelope(
      await call('POST', '/auth/signup', { email: email.toUpperCase(), password: 'password-123' }),
      409,
      'CONFLICT',
    );
  });

  test('an account address has the one syntax every service accepts: 64 characters before the @ at most', async () => {
    const local = `${'a'.repeat(56)}${Date.now().toString(36)}`.slice(-64);
    const tooLong = await call('POST', '/auth/signup', { email: `x${local}@example.com`, password: 'password-123' });
    expectEnvelope(tooLong, 422, 'VALIDATION_ERROR');
    expect(tooLong.body.error.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string' });
    const label = `${'b'.repeat(64)}.example.com`;
    const longLabel = await call('POST', '/auth/signup', { email: `x@${label}`, password: 'password-123' });
    expectEnvelope(longLabel, 422, 'VALIDATION_ERROR');
    expect(
      (await call('POST', '/auth/signup', { email: `${local}@example.com`, password: 'password-123' })).status,
    ).toBe(201);
  });

  test('login with the right password sets the session; a wrong one is INVALID_CREDENTIALS', async () => {
    const email = uniqueEmail();
    await signUp(email, 'right-password');
    expectEnvelope(
      await call('POST', '/auth/login', { email, password: 'wrong-password' }),
      401,
      'INVALID_CREDENTIALS',
    );
    expectEnvelope(
      await call('POST', '/auth/login', { email: uniqueEmail(), password: 'right-password' }),
      401,
      'INVALID_CREDENTIALS',
    );
    const ok = await call('POST', '/auth/login', { email, password: 'right-password' });
    expect(ok.status).toBe(200);
    expect(ok.headers.getSetCookie().join(';')).toMatch(/svc_session=.*HttpOnly/i);
  });

  test('repeated wrong passwords for one address are throttled with a 429', async () => {
    const email = uniqueEmail();
    await signUp(email, 'right-password');
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++)
      statuses.push((await call('POST', '/auth/login', { email, password: `wrong-${i}` })).status);
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    const limited = await call('POST', '/auth/login', { email, password: 'right-password' });
    expectEnvelope(limited, 429, 'RATE_LIMIT_EXCEEDED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  test('the login throttle counts every spelling identity accepts for one account together', async () => {
    const email = uniqueEmail();
    await signUp(email, 'right-password');
    const spellings = [email, `${email}   `, email.toUpperCase(), ` ${email.replace(/^./, (c) => c.toUpperCase())}\t`];
    // The padded spelling reaches the same account, so it must spend the same budget.
    expect((await login(spellings[1], 'right-password')).status).toBe(200);
    for (let i = 1; i < 10; i++) expect((await login(spellings[i % spellings.length], `wrong-${i}`)).status).toBe(401);
    for (const spelling of spellings) expectEnvelope(await login(spelling, 'right-password'), ...THROTTLED);
  });

  test('a huge email in a login attempt costs the throttle a key of fixed size, not the email', async () => {
    const tag = `huge-${Date.now().toString(36)}`;
    const email = `${tag}${'a'.repeat(500_000)}@example.com`;
    expectEnvelope(await login(email, 'wrong-password'), 401, 'INVALID_CREDENTIALS');
    const redis = new Redis(platform.env.REDIS_URL, { lazyConnect: true });
    try {
      await redis.connect();
      const keys: string[] = [];
      let cursor = '0';
      do {
        const [next, found] = await redis.scan(cursor, 'MATCH', `${platform.runId}:rl:login:*`, 'COUNT', 1000);
        cursor = next;
        keys.push(...found);
      } while (cursor !== '0');
      expect(keys.length).toBeGreaterThan(0);
      expect(Math.max(...keys.map((k) => k.length))).toBeLessThan(200);
    } finally {
      redis.disconnect();
    }
  });

  test('without TRUST_PROXY a forged X-Forwarded-For buys no fresh login attempts', async () => {
    const email = uniqueEmail();
    await signUp(email, 'right-password');
    for (let i = 0; i < 10; i++) expect((await login(email, `wrong-${i}`)).status).toBe(401);
    for (const forged of ['203.0.113.7', '10.1.2.3', '127.0.0.2, 198.51.100.1']) {
      expectEnvelope(await login(email, 'wrong', { headers: { 'x-forwarded-for': forged } }), ...THROTTLED);
    }
  });

  test('TRUST_PROXY=loopback believes X-Forwarded-For from a local proxy: one budget per client address', async () => {
    const email = uniqueEmail();
    await signUp(email, 'right-password');
    const port = await freePort();
    const env = { ...platform.env, PORT: String(port), TRUST_PROXY: 'loopback' };
    const gateway = startPlatform(['gateway'], env, 'gateway-trust-proxy');
    try {
      const baseUrl = `http://127.0.0.1:${port}`;
      // Ready, not just live: attempts counted before Redis connects would go to the in-process fallback.
      await waitFor('gateway', () => httpOk(`${baseUrl}/readyz`), gateway);
      const from = (ip: string) => ({ baseUrl, headers: { 'x-forwarded-for': ip } });
      for (let i = 0; i < 10; i++) expect((await login(email, `wrong-${i}`, from('198.51.100.1'))).status).toBe(401);
      expectEnvelope(await login(email, 'wrong', from('198.51.100.1')), ...THROTTLED);
      expect((await login(email, 'right-password', from('198.51.100.2'))).status).toBe(200);
    } finally {
      await stopProcess(gateway);
    }
  });

  test('session routes refuse a missing or forged cookie, and logout ends the session', async () => {
    expectEnvelope(await call('GET', '/users/@me'), 401, 'UNAUTHORIZED');
    expectEnvelope(
      await call('GET', '/users/@me', undefined, { cookie: 'svc_session=s%3Aforged.sig' }),
      401,
      'UNAUTHORIZED',
    );
    const { cookie } = await signUp();
    expect((await call('GET', '/auth/logout', undefined, { cookie })).status).toBe(200);
    expectEnvelope(await call('GET', '/users/@me', undefined, { cookie }), 401, 'UNAUTHORIZED');
  });

  test('a project is created with pk_ and sk_ keys shown once, then only their prefixes', async () => {
    const t = await newTenant();
    expect(t.publicKey).toMatch(/^pk_/);
    expect(t.secretKey).toMatch(/^sk_/);
    const list = await call('GET', '/users/@me/projects', undefined, { cookie: t.cookie });
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject({ id: t.projectId, role: 'owner', secretKeyPrefix: t.secretKey.slice(0, 10) });
    expect(list.body[0].secretKey).toBeUndefined();
    expectEnvelope(
      await call('POST', '/users/@me/projects', { name: '' }, { cookie: t.cookie }),
      422,
      'VALIDATION_ERROR',
    );
  });

  test('a project name with line breaks or other control characters is a 422 and changes nothing', async () => {
    const t = await newTenant();
    const path = `/users/@me/projects/${t.projectId}`;
    for (const name of [
      'Acme\r\nInvited by: ceo@example.com',
      'tab\there',
      'bell\u0007',
      'c1\u0085',
      'rtl\u202Eevil',
    ]) {
      const created = await call('POST', '/users/@me/projects', { name }, { cookie: t.cookie });
      expectEnvelope(created, 422, 'VALIDATION_ERROR');
      expect(created.body.error.errors[0]).toMatchObject({ field: 'name', code: 'invalid_string' });
      expectEnvelope(await call('PATCH', path, { name }, { cookie: t.cookie }), 422, 'VALIDATION_ERROR');
    }
    const list = await call('GET', '/users/@me/projects', undefined, { cookie: t.cookie });
    expect(list.body.map((p: { name: string }) => p.name)).toEqual(['Test project']);
    const unicode = await call('PATCH', path, { name: 'Café Ünïcødé 日本' }, { cookie: t.cookie });
    expect(unicode.body.name).toBe('Café Ünïcødé 日本');
  });

  test('projects are renamed and deleted by their owner; another user gets 404', async () => {
    const t = await newTenant();
    const renamed = await call(
      'PATCH',
      `/users/@me/projects/${t.projectId}`,
      { name: 'Renamed' },
      { cookie: t.cookie },
    );
    expect(renamed.body).toMatchObject({ id: t.projectId, name: 'Renamed' });
    const other = await signUp();
    expectEnvelope(
      await call('PATCH', `/users/@me/projects/${t.projectId}`, { name: 'x' }, { cookie: other.cookie }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('DELETE', `/users/@me/projects/${t.projectId}`, undefined, { cookie: other.cookie }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('POST', `/users/@me/projects/not-a-uuid/regenerate-keys`, undefined, { cookie: t.cookie }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    // A deletion is a saga (test/project-reset.test.ts): 202 with its progress; the project is gone at once.
    const deleted = await call('DELETE', `/users/@me/projects/${t.projectId}`, undefined, { cookie: t.cookie });
    expect(deleted.status).toBe(202);
    expect(deleted.body).toMatchObject({ projectId: t.projectId, kind: 'delete', status: 'running' });
    expect((await call('GET', '/users/@me/projects', undefined, { cookie: t.cookie })).body).toEqual([]);
  });

  test('GET /config needs no authentication and /auth/oauth-config lists no providers by default', async () => {
    const config = await call('GET', '/config');
    expect(config.status).toBe(200);
    expect(config.body.signupEnabled).toBe(true);
    expect((await call('GET', '/auth/oauth-config')).body).toEqual({ providers: [] });
  });

  test('malformed JSON is a 400 and an unknown route a 404, both in the envelope', async () => {
    expectEnvelope(await call('POST', '/auth/login', undefined, { raw: '{"email":' }), 400, 'BAD_REQUEST');
    expectEnvelope(await call('GET', '/no/such/route'), 404, 'RESOURCE_NOT_FOUND');
  });

  test('SIGNUP_DISABLED=true makes signup a 403 and /config says so; login still works', async () => {
    const email = uniqueEmail();
    await signUp(email, 'password-123');
    const identityPort = await freePort();
    const port = await freePort();
    const env = { ...platform.env, SIGNUP_DISABLED: 'true', IDENTITY_PORT: String(identityPort), PORT: String(port) };
    const identity = startPlatform(['identity'], env, 'identity-signup-disabled');
    const gateway = startPlatform(['gateway'], env, 'gateway-signup-disabled');
    try {
      await waitFor('identity', () => serviceReady(identityPort), identity);
      const baseUrl = `http://127.0.0.1:${port}`;
      await waitFor('gateway', () => httpOk(`${baseUrl}/healthz`), gateway);
      expectEnvelope(
        await call('POST', '/auth/signup', { email: uniqueEmail(), password: 'password-123' }, { baseUrl }),
        403,
        'SIGNUP_DISABLED',
      );
      expect((await call('GET', '/config', undefined, { baseUrl })).body.signupEnabled).toBe(false);
      expect((await call('POST', '/auth/login', { email, password: 'password-123' }, { baseUrl })).status).toBe(200);
    } finally {
      await Promise.all([stopProcess(gateway), stopProcess(identity)]);
    }
  });
});
