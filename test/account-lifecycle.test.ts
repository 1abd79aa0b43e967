import pg from 'pg';
import { createHash } from 'node:crypto';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { call, expectEnvelope, platform, sessionCookie, signUp, uniqueEmail } from './support/client.js';
import { waitForMail, type ReceivedMail } from './support/messaging.js';

// Email verification and password reset through the gateway: the mail reaches the test SMTP sink,
// its link carries the token. Expiry is reached by moving the token row's expires_at in identity's database.

const identityDb = new pg.Pool({
  connectionString: serviceDatabaseUrl('identity', platform.env.DATABASE_URL, platform.env),
  max: 2,
});
afterAll(() => identityDb.end());

const tokenOf = (mail: ReceivedMail, page: string): string => {
  const m = new RegExp(`/app/${page}\\?token=([A-Za-z0-9_-]+)`).exec(mail.parsed.text ?? '');
  if (!m) throw new Error(`no ${page} link in: ${mail.parsed.text}`);
  return m[1];
};
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const expire = (token: string) =>
  identityDb.query(`UPDATE account_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, [
    sha256(token),
  ]);
const login = (email: string, password: string) => call('POST', '/auth/login', { email, password });
const cookieOf = (res: { headers: Headers }) => sessionCookie(res.headers);

describe('email verification', () => {
  test('the signed-in user gets a link; its token marks the email verified once', async () => {
    const { cookie, email } = await signUp(uniqueEmail('verify'));
    expect((await call('GET', '/users/@me', undefined, { cookie })).body.emailVerified).toBe(false);

    const sent = await call('POST', '/auth/request-verification', undefined, { cookie });
    expect(sent.status).toBe(200);
    const [mail] = await waitForMail(email);
    expect(mail.parsed.subject).toMatch(/verify/i);
    expect(mail.parsed.from?.value[0].address).toMatch(/^no-reply@/);
    const token = tokenOf(mail, 'verify');
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);

    const verified = await call('POST', '/auth/verify-email', { token });
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ email, emailVerified: true });
    expect((await call('GET', '/users/@me', undefined, { cookie })).body.emailVerified).toBe(true);

    // Single use.
    expectEnvelope(await call('POST', '/auth/verify-email', { token }), 400, 'INVALID_TOKEN');
    // Only the hash is stored.
    const stored = await identityDb.query('SELECT 1 FROM account_tokens WHERE token_hash = $1', [token]);
    expect(stored.rowCount).toBe(0);
  });

  test('request-verification needs a session', async () => {
    expectEnvelope(await call('POST', '/auth/request-verification'), 401, 'UNAUTHORIZED');
  });

  test('an expired, forged or missing token is a 400 INVALID_TOKEN and verifies nothing', async () => {
    const { cookie, email } = await signUp(uniqueEmail('verify-exp'));
    await call('POST', '/auth/request-verification', undefined, { cookie });
    const token = tokenOf((await waitForMail(email))[0], 'verify');
    await expire(token);
    expectEnvelope(await call('POST', '/auth/verify-email', { token }), 400, 'INVALID_TOKEN');
    expectEnvelope(await call('POST', '/auth/verify-email', { token: 'forged-token' }), 400, 'INVALID_TOKEN');
    expectEnvelope(await call('POST', '/auth/verify-email', {}), 400, 'INVALID_TOKEN');
    expect((await call('GET', '/users/@me', undefined, { cookie })).body.emailVerified).toBe(false);
  });
});

describe('password reset', () => {
  test('the mailed token sets a new password and ends every session', async () => {
    const { cookie, email } = await signUp(uniqueEmail('reset'), 'old-password-1');
    const other = await login(email, 'old-password-1');
    const otherCookie = cookieOf(other);
    expect((await call('GET', '/users/@me', undefined, { cookie: otherCookie })).status).toBe(200);

    const asked = await call('POST', '/auth/request-password-reset', { email: ` ${email.toUpperCase()} ` });
    expect(asked.status).toBe(200);
    const [mail] = await waitForMail(email);
    expect(mail.parsed.subject).toMatch(/reset/i);
    const token = tokenOf(mail, 'reset');

    // Weak password: 422, token still usable.
    const weak = await call('POST', '/auth/reset-password', { token, password: 'short' });
    expectEnvelope(weak, 422, 'VALIDATION_ERROR');
    expect(weak.body.error.errors[0]).toMatchObject({ field: 'password' });

    expect((await call('POST', '/auth/reset-password', { token, password: 'new-password-2' })).status).toBe(200);
    expectEnvelope(await login(email, 'old-password-1'), 401, 'INVALID_CREDENTIALS');
    const fresh = await login(email, 'new-password-2');
    expect(fresh.status).toBe(200);
    // The mailed link proved the mailbox: the address is verified (an OAuth sign-in keeps this password).
    expect(fresh.body.emailVerified).toBe(true);
    for (const c of [cookie, otherCookie]) {
      expect((await call('GET', '/users/@me', undefined, { cookie: c })).status).toBe(401);
    }

    // Single use.
    expectEnvelope(
      await call('POST', '/auth/reset-password', { token, password: 'third-password-3' }),
      400,
      'INVALID_TOKEN',
    );
    expect((await login(email, 'new-password-2')).status).toBe(200);
  });

  test('an unknown address answers 200 like a known one, and nothing is sent', async () => {
    const email = uniqueEmail('nobody');
    const res = await call('POST', '/auth/request-password-reset', { email });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect((await call('POST', '/auth/request-password-reset', { email: 'not-an-email' })).status).toBe(200);
  });

  test('an expired or forged token changes nothing', async () => {
    const { email } = await signUp(uniqueEmail('reset-exp'), 'old-password-1');
    await call('POST', '/auth/request-password-reset', { email });
    const token = tokenOf((await waitForMail(email))[0], 'reset');
    await expire(token);
    const body = { token, password: 'new-password-2' };
    expectEnvelope(await call('POST', '/auth/reset-password', body), 400, 'INVALID_TOKEN');
    expectEnvelope(
      await call('POST', '/auth/reset-password', { token: 'x'.repeat(43), password: 'new-password-2' }),
      400,
      'INVALID_TOKEN',
    );
    expect((await login(email, 'old-password-1')).status).toBe(200);
  });

  test('at most 3 reset mails per address per 15 minutes; beyond that still 200, nothing sent', async () => {
    const { email } = await signUp(uniqueEmail('reset-throttle'));
    for (let i = 0; i < 5; i++) {
      expect((await call('POST', '/auth/request-password-reset', { email })).status).toBe(200);
    }
    await waitForMail(email, 3);
    const issued = await identityDb.query(
      `SELECT count(*)::int AS n FROM account_tokens t JOIN users u ON u.id = t.user_id
       WHERE lower(u.email) = lower($1) AND t.purpose = 'reset_password'`,
      [email],
    );
    expect(issued.rows[0].n).toBe(3);
  });

  test('the limit holds for requests that arrive together', async () => {
    const { email } = await signUp(uniqueEmail('reset-burst'));
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => call('POST', '/auth/request-password-reset', { email })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    // Each answer comes after its token was issued or refused: the count is final now.
    const issued = await identityDb.query(
      `SELECT count(*)::int AS n FROM account_tokens t JOIN users u ON u.id = t.user_id
       WHERE lower(u.email) = lower($1) AND t.purpose = 'reset_password'`,
      [email],
    );
    expect(issued.rows[0].n).toBe(3);
  });
});

test('GET /auth/oauth-config lists no providers when none is configured', async () => {
  expect(await call('GET', '/auth/oauth-config')).toMatchObject({ status: 200, body: { providers: [] } });
});
