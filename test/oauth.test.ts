import { type ChildProcess, execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import {
  type Answer,
  call,
  eventually,
  expectEnvelope,
  platform,
  sessionCookie,
  uniqueEmail,
} from './support/client.js';
import { receivedMail, signUpVerified, waitForMail } from './support/messaging.js';
import { freePort, httpOk, ROOT, startPlatform, stopProcess, waitFor } from './support/processes.js';

const CHROMIUM = '/usr/bin/chromium';

/** A person on the console's login page: the error a failed sign-in shows, then "Continue with GitHub". */
const BROWSER_SCRIPT = `
import { chromium } from 'playwright-core';
const c = JSON.parse(process.env.OAUTH_CHECK);
const browser = await chromium.launch({ executablePath: c.chromium });
const seen = {};
try {
  const page = await browser.newPage();
  await page.goto(c.base + '/app/login?error=oauth_email_unverified');
  seen.alert = (await page.getByRole('alert').first().textContent()).trim();
  await page.getByRole('link', { name: 'Continue with GitHub' }).click();
  await page.waitForURL(c.base + '/app');
  seen.url = page.url();
  seen.me = await page.evaluate(async () => (await fetch('/users/@me')).json());
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen));
`;

// Sign-in with GitHub through a real OAuth 2.0 provider written for this test on loopback: it checks the
// client secret, the redirect URI and the PKCE verifier like GitHub does. Identity and the gateway run in a
// process of their own (on the run's database and bus) whose GitHub endpoints point at it.

const CLIENT_ID = 'test-client-id';
const CLIENT_SECRET = 'test-client-secret-0123456789';

interface ProviderUser {
  email: string;
  verified: boolean;
}

/** The provider: /authorize signs in as `nextUser`, /token exchanges a code, /user/emails lists addresses. */
function startProvider() {
  const codes = new Map<string, { challenge: string; redirectUri: string; user: ProviderUser }>();
  const tokens = new Map<string, ProviderUser>();
  const seen = { tokenRequests: 0, refusedVerifiers: 0, authorizeQueries: [] as URLSearchParams[] };
  let nextUser: ProviderUser = { email: 'nobody@example.com', verified: true };
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://provider');
    let body = '';
    for await (const chunk of req) body += chunk;
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const q = url.searchParams;
      seen.authorizeQueries.push(q);
      if (q.get('client_id') !== CLIENT_ID || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge'))
        return json(res, 400, { error: 'invalid_request' });
      const code = randomBytes(16).toString('hex');
      codes.set(code, { challenge: q.get('code_challenge')!, redirectUri: q.get('redirect_uri')!, user: nextUser });
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      res.writeHead(302, { location: back.toString() }).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      seen.tokenRequests++;
      const f = new URLSearchParams(body);
      const grant = codes.get(f.get('code') ?? '');
      if (f.get('client_id') !== CLIENT_ID || f.get('client_secret') !== CLIENT_SECRET)
        return json(res, 200, { error: 'incorrect_client_credentials' });
      if (!grant || grant.redirectUri !== f.get('redirect_uri'))
        return json(res, 200, { error: 'bad_verification_code' });
      const challenge = createHash('sha256')
        .update(f.get('code_verifier') ?? '')
        .digest('base64url');
      if (challenge !== grant.challenge) {
        seen.refusedVerifiers++;
        return json(res, 200, { error: 'bad_verification_code', error_description: 'code_verifier mismatch' });
      }
      codes.delete(f.get('code')!);
      const token = randomBytes(16).toString('hex');
      tokens.set(token, grant.user);
      return json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    if (req.method === 'GET' && url.pathname === '/user/emails') {
      const user = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
      if (!user) return json(res, 401, { message: 'Bad credentials' });
      return json(res, 200, [
        { email: `other-${user.email}`, primary: false, verified: true, visibility: null },
        { email: user.email, primary: true, verified: user.verified, visibility: 'private' },
      ]);
    }
    json(res, 404, { message: 'Not Found' });
  });
  return {
    server,
    seen,
    signInAs(user: ProviderUser) {
      nextUser = user;
    },
  };
}

const provider = startProvider();
const identityDb = new pg.Pool({
  connectionString: serviceDatabaseUrl('identity', platform.env.DATABASE_URL, platform.env),
  max: 1,
});
let child: ChildProcess;
let base: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => provider.server.listen(0, '127.0.0.1', resolve));
  const providerUrl = `http://127.0.0.1:${(provider.server.address() as AddressInfo).port}`;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  child = startPlatform(
    ['identity', 'gateway'],
    {
      ...platform.env,
      PORT: String(port),
      PUBLIC_URL: base,
      IDENTITY_PORT: String(await freePort()),
      GITHUB_CLIENT_ID: CLIENT_ID,
      GITHUB_CLIENT_SECRET: CLIENT_SECRET,
      OAUTH_GITHUB_AUTHORIZE_URL: `${providerUrl}/login/oauth/authorize`,
      OAUTH_GITHUB_TOKEN_URL: `${providerUrl}/login/oauth/access_token`,
      OAUTH_GITHUB_EMAILS_URL: `${providerUrl}/user/emails`,
    },
    'oauth',
  );
  await waitFor('oauth platform', () => httpOk(`${base}/healthz`), child);
}, 120_000);

afterAll(async () => {
  await identityDb.end();
  if (child) await stopProcess(child);
  await new Promise((resolve) => provider.server.close(resolve));
});

/** A request that does not follow redirects; `cookies` is what the browser holds (name -> value). */
async function visit(url: string, cookies: Map<string, string>) {
  const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const eq = pair!.indexOf('=');
    const [name, value] = [pair!.slice(0, eq), pair!.slice(eq + 1)];
    if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) cookies.delete(name);
    else cookies.set(name, value);
  }
  return { status: res.status, location: res.headers.get('location') ?? '' };
}

/** Clicks "Continue with GitHub" and follows the provider back: the callback URL, not yet visited. */
async function toProviderAndBack(cookies: Map<string, string>): Promise<string> {
  const start = await visit(`${base}/auth/oauth/github`, cookies);
  expect(start.status).toBe(302);
  const back = await visit(start.location, cookies);
  expect(back.status).toBe(302);
  expect(back.location.startsWith(`${base}/auth/oauth/github/callback?`)).toBe(true);
  return back.location;
}

async function signIn(user: ProviderUser) {
  provider.signInAs(user);
  const cookies = new Map<string, string>();
  const done = await visit(await toProviderAndBack(cookies), cookies);
  return { ...done, cookies, session: cookies.get('svc_session') };
}

const me = (session: string) =>
  call('GET', '/users/@me', undefined, { baseUrl: base, cookie: `svc_session=${session}` });

test('the configured provider is listed; an unconfigured one is a 404', async () => {
  expect(await call('GET', '/auth/oauth-config', undefined, { baseUrl: base })).toMatchObject({
    status: 200,
    body: { providers: [{ id: 'github', name: 'GitHub' }] },
  });
  expect((await call('GET', '/config', undefined, { baseUrl: base })).body.oauthProviders).toEqual(['github']);
  expectEnvelope(
    await call('GET', '/auth/oauth/google', undefined, { baseUrl: base }),
    404,
    'OAUTH_PROVIDER_NOT_FOUND',
  );
  expectEnvelope(
    await call('GET', '/auth/oauth/google/callback?code=x&state=y', undefined, { baseUrl: base }),
    404,
    'OAUTH_PROVIDER_NOT_FOUND',
  );
});

test('the redirect to the provider carries a PKCE S256 challenge, a state and the callback URI', async () => {
  const cookies = new Map<string, string>();
  const start = await visit(`${base}/auth/oauth/github`, cookies);
  const q = new URL(start.location).searchParams;
  expect(q.get('client_id')).toBe(CLIENT_ID);
  expect(q.get('redirect_uri')).toBe(`${base}/auth/oauth/github/callback`);
  expect(q.get('code_challenge_method')).toBe('S256');
  expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(q.get('state')!.length).toBeGreaterThanOrEqual(32);
  // The verifier is not in the browser's readable state: the cookie is signed and httpOnly.
  expect(cookies.get('svc_oauth')).toMatch(/^s%3A/);
});

test('signing in creates the account with the verified address, a second sign-in reuses it', async () => {
  const email = uniqueEmail('oauth-new');
  const first = await signIn({ email, verified: true });
  expect(first).toMatchObject({ status: 302, location: '/app' });
  expect(first.cookies.has('svc_oauth')).toBe(false);
  const user = await me(first.session!);
  expect(user).toMatchObject({ status: 200, body: { email, emailVerified: true } });

  const second = await signIn({ email, verified: true });
  expect(second.location).toBe('/app');
  expect(second.session).not.toBe(first.session);
  expect((await me(second.session!)).body.id).toBe(user.body.id);
  // The account has no password to guess: only OAuth (or a password reset) opens it.
  const login = await call('POST', '/auth/login', { email, password: 'password-123' }, { baseUrl: base });
  expectEnvelope(login, 401, 'INVALID_CREDENTIALS');
});

test('an existing password account is linked when the provider verified the address', async () => {
  const email = uniqueEmail('oauth-link');
  const signup = await call('POST', '/auth/signup', { email, password: 'password-123' }, { baseUrl: base });
  expect(signup).toMatchObject({ status: 201, body: { emailVerified: false } });
  const done = await signIn({ email: email.toUpperCase(), verified: true });
  expect(done.location).toBe('/app');
  expect((await me(done.session!)).body).toMatchObject({ id: signup.body.id, email, emailVerified: true });
});

test('linking an unverified account ends the password and sessions of whoever signed up with the address', async () => {
  // Someone signs up with another person's address (nothing verifies it); that person later signs in with GitHub.
  const email = uniqueEmail('oauth-prehijack');
  const signup = await call('POST', '/auth/signup', { email, password: 'squatter-123' }, { baseUrl: base });
  expect(signup.status).toBe(201);
  const squatter = sessionCookie(signup.headers);
  const done = await signIn({ email, verified: true });
  expect((await me(done.session!)).body).toMatchObject({ id: signup.body.id, emailVerified: true });
  // The squatter's password and session no longer open the account the owner now uses.
  const login = await call('POST', '/auth/login', { email, password: 'squatter-123' }, { baseUrl: base });
  expectEnvelope(login, 401, 'INVALID_CREDENTIALS');
  expectEnvelope(await call('GET', '/users/@me', undefined, { baseUrl: base, cookie: squatter }), 401, 'UNAUTHORIZED');
  expect((await me(done.session!)).status).toBe(200);

  expect((await me((await signIn({ email, verified: true })).session!)).status).toBe(200);
  expect((await me(done.session!)).status).toBe(200);
});

test('taking over an unverified account rotates its keys, revokes its invitations and mails the owner', async () => {
  // The squatter signs up with the victim's address, makes a project, keeps its keys, invites an accomplice
  // (an account of its own whose address is verified) and asks for a password reset link.
  const email = uniqueEmail('oauth-squat');
  const signup = await call('POST', '/auth/signup', { email, password: 'squatter-123' }, { baseUrl: base });
  const squatter = sessionCookie(signup.headers);
  const made = await call('POST', '/users/@me/projects', { name: 'Squatted' }, { baseUrl: base, cookie: squatter });
  expect(made.status).toBe(201);
  const { secretKey, publicKey } = made.body as { secretKey: string; publicKey: string };
  const contacts = (key: string) => call('GET', '/contacts', undefined, { baseUrl: base, key });
  // Both gateways (this run's and the platform's) have the keys cached.
  expect((await contacts(secretKey)).status).toBe(200);
  expect((await call('GET', '/contacts', undefined, { key: secretKey })).status).toBe(200);
  const accomplice = await signUpVerified();
  const invited = await call(
    'POST',
    `/projects/${made.body.id}/members`,
    { email: accomplice.email, role: 'admin' },
    { baseUrl: base, cookie: squatter },
  );
  expect(invited.status).toBe(201);
  const reset = await call('POST', '/auth/request-password-reset', { email }, { baseUrl: base });
  expect(reset.status).toBe(200);
  const [resetMail] = await waitForMail(email);
  const resetToken = /\/app\/reset\?token=([A-Za-z0-9_-]+)/.exec(resetMail!.parsed.text ?? '')![1];

  const done = await signIn({ email, verified: true });
  expect(done.location).toBe('/app');
  const owner = `svc_session=${done.session}`;

  // The squatter's session, keys, invitation and mailed link open nothing of what the owner now holds.
  expectEnvelope(await call('GET', '/users/@me', undefined, { baseUrl: base, cookie: squatter }), 401, 'UNAUTHORIZED');
  // Gateways drop cached keys when they hear identity.project.keys_rotated, which the takeover publishes.
  const refused = (res: Answer) => (res.status === 401 ? res : undefined);
  expectEnvelope(await eventually(async () => refused(await contacts(secretKey))), 401, 'INVALID_API_KEY');
  const other = () => call('GET', '/contacts', undefined, { key: secretKey });
  expectEnvelope(await eventually(async () => refused(await other())), 401, 'INVALID_API_KEY');
  expectEnvelope(await call('GET', '/contacts', undefined, { baseUrl: base, key: publicKey }), 401, 'INVALID_API_KEY');
  expectEnvelope(
    await call('POST', `/users/@me/invitations/${invited.body.id}/accept`, undefined, { cookie: accomplice.cookie }),
    410,
    'INVITATION_GONE',
  );
  const replaced = await call('POST', '/auth/reset-password', { token: resetToken, password: 'squatter-456' });
  expectEnvelope(replaced, 400, 'INVALID_TOKEN');

  // The owner keeps the project, issues fresh keys and is told what happened.
  const rotated = await call('POST', `/users/@me/projects/${made.body.id}/regenerate-keys`, undefined, {
    baseUrl: base,
    cookie: owner,
  });
  expect(rotated.status).toBe(200);
  expect((await contacts(rotated.body.secretKey)).status).toBe(200);
  const notice = await eventually(async () =>
    (await receivedMail(email)).find((m) => m.parsed.subject?.startsWith('Your account was secured')),
  );
  expect(notice.parsed.text).toContain('every other session was signed out');
  expect(notice.parsed.text).toContain(`Squatted (${made.body.id})`);
  expect(notice.parsed.text).toContain('1 pending invitation(s) it sent or into its projects were revoked');
});

test('a project created by the squatter while the owner takes the account over: 401, or its keys rotate', async () => {
  // The squatter keeps creating projects while the owner's sign-in runs: a create whose session was checked just
  // before the takeover ended it waits for the takeover and must not come back with keys that still work.
  for (let round = 0; round < 8; round++) {
    const email = uniqueEmail('oauth-race');
    const signup = await call('POST', '/auth/signup', { email, password: 'squatter-123' }, { baseUrl: base });
    const cookie = sessionCookie(signup.headers);
    provider.signInAs({ email, verified: true });
    const cookies = new Map<string, string>();
    const callback = await toProviderAndBack(cookies);
    let signedIn = false;
    const creates: Answer[] = [];
    const create = async () => {
      while (!signedIn)
        creates.push(await call('POST', '/users/@me/projects', { name: 'Race' }, { baseUrl: base, cookie }));
      creates.push(await call('POST', '/users/@me/projects', { name: 'Race' }, { baseUrl: base, cookie }));
    };
    const takeover = (async () => {
      // Once the squatter's creates are under way.
      while (!creates.length) await new Promise((resolve) => setImmediate(resolve));
      const done = await visit(callback, cookies);
      signedIn = true;
      return done;
    })();
    await Promise.all([takeover, create(), create(), create()]);
    expect((await takeover).location).toBe('/app');
    expect(creates.at(-1)!.status).toBe(401);
    for (const made of creates) {
      if (made.status !== 201) {
        expectEnvelope(made, 401, 'UNAUTHORIZED');
        continue;
      }
      // Created before the takeover: its keys rotated with the account's other projects (never used, so cached
      // nowhere: the first use asks identity).
      const res = await call('GET', '/contacts', undefined, { baseUrl: base, key: made.body.secretKey });
      expectEnvelope(res, 401, 'INVALID_API_KEY');
    }
  }
});

test('linking an account whose address was verified keeps its password, sessions and keys', async () => {
  const email = uniqueEmail('oauth-verified');
  const signup = await call('POST', '/auth/signup', { email, password: 'password-123' }, { baseUrl: base });
  const cookie = sessionCookie(signup.headers);
  const made = await call('POST', '/users/@me/projects', { name: 'Kept' }, { baseUrl: base, cookie });
  // As the mailed verification link does (account-lifecycle.test.ts follows that link).
  await identityDb.query('UPDATE users SET email_verified = true WHERE id = $1', [signup.body.id]);
  const done = await signIn({ email, verified: true });
  expect((await me(done.session!)).body.id).toBe(signup.body.id);
  const login = await call('POST', '/auth/login', { email, password: 'password-123' }, { baseUrl: base });
  expect(login.status).toBe(200);
  const before = await call('GET', '/users/@me', undefined, { baseUrl: base, cookie });
  expect(before.status).toBe(200);
  expect((await call('GET', '/contacts', undefined, { baseUrl: base, key: made.body.secretKey })).status).toBe(200);
  expect((await call('GET', '/contacts', undefined, { key: made.body.secretKey })).status).toBe(200);
  expect((await receivedMail(email)).length).toBe(0);
});

test('an unverified address is refused and neither creates nor links an account', async () => {
  const fresh = uniqueEmail('oauth-unverified');
  const refused = await signIn({ email: fresh, verified: false });
  expect(refused).toMatchObject({ status: 302, location: '/app/login?error=oauth_email_unverified' });
  expect(refused.session).toBeUndefined();
  // Nobody holds the address: signing up with it works.
  expect(
    (await call('POST', '/auth/signup', { email: fresh, password: 'password-123' }, { baseUrl: base })).status,
  ).toBe(201);
  // An existing account is not opened either.
  const again = await signIn({ email: fresh, verified: false });
  expect(again.location).toBe('/app/login?error=oauth_email_unverified');
  expect(again.session).toBeUndefined();
});

test('an address the platform does not accept is explained on the login page, not answered as JSON', async () => {
  const refused = await signIn({ email: `${'a'.repeat(65)}@example.com`, verified: true });
  expect(refused).toMatchObject({ status: 302, location: '/app/login?error=oauth_email_invalid' });
  expect(refused.session).toBeUndefined();
});

test('a forged, missing or foreign state is refused before any code exchange', async () => {
  provider.signInAs({ email: uniqueEmail('oauth-state'), verified: true });
  const before = provider.seen.tokenRequests;

  const cookies = new Map<string, string>();
  const callback = new URL(await toProviderAndBack(cookies));
  const forged = new URL(callback);
  forged.searchParams.set('state', `${callback.searchParams.get('state')!.slice(0, -2)}xx`);
  expect(await visit(forged.toString(), new Map(cookies))).toMatchObject({
    status: 302,
    location: '/app/login?error=oauth_state',
  });
  const noState = new URL(callback);
  noState.searchParams.delete('state');
  expect((await visit(noState.toString(), new Map(cookies))).location).toBe('/app/login?error=oauth_state');
  // Another browser (no state cookie) with the right state and code.
  expect((await visit(callback.toString(), new Map())).location).toBe('/app/login?error=oauth_state');
  // A tampered cookie (its signature no longer matches).
  const tampered = new Map(cookies);
  tampered.set(
    'svc_oauth',
    cookies.get('svc_oauth')!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
  );
  expect((await visit(callback.toString(), tampered)).location).toBe('/app/login?error=oauth_state');
  expect(provider.seen.tokenRequests).toBe(before);

  // The genuine callback still works once, and the state is spent after it.
  const ok = await visit(callback.toString(), cookies);
  expect(ok.location).toBe('/app');
  expect((await visit(callback.toString(), cookies)).location).toBe('/app/login?error=oauth_state');
});

test("a code injected into another browser's flow fails the PKCE check at the provider", async () => {
  provider.signInAs({ email: uniqueEmail('oauth-pkce'), verified: true });
  const victim = new Map<string, string>();
  const attacker = new Map<string, string>();
  const attackerCallback = new URL(await toProviderAndBack(attacker));
  const victimCallback = new URL(await toProviderAndBack(victim));
  // The victim's state (so the state check passes) with the attacker's code: bound to another verifier.
  const injected = new URL(victimCallback);
  injected.searchParams.set('code', attackerCallback.searchParams.get('code')!);
  const refusedBefore = provider.seen.refusedVerifiers;
  const res = await visit(injected.toString(), victim);
  expect(res).toMatchObject({ status: 302, location: '/app/login?error=oauth_provider' });
  expect(victim.get('svc_session')).toBeUndefined();
  expect(provider.seen.refusedVerifiers).toBe(refusedBefore + 1);
});

test('the user declining at the provider is reported', async () => {
  const cookies = new Map<string, string>();
  const start = await visit(`${base}/auth/oauth/github`, cookies);
  const state = new URL(start.location).searchParams.get('state')!;
  const res = await visit(`${base}/auth/oauth/github/callback?error=access_denied&state=${state}`, cookies);
  expect(res.location).toBe('/app/login?error=oauth_denied');
});

test('the console offers "Continue with GitHub", explains ?error= and lands signed in on /app', async () => {
  if (!existsSync(CHROMIUM)) {
    console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
    return;
  }
  const email = uniqueEmail('oauth-browser');
  provider.signInAs({ email, verified: true });
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', BROWSER_SCRIPT],
      {
        cwd: ROOT,
        timeout: 120_000,
        env: { ...process.env, OAUTH_CHECK: JSON.stringify({ chromium: CHROMIUM, base }) },
      },
      (err, out) => (err ? reject(err) : resolve(out)),
    );
  });
  const seen = JSON.parse(stdout);
  expect(seen.alert).toMatch(/no verified email address/);
  expect(seen.url).toBe(`${base}/app`);
  expect(seen.me).toMatchObject({ email, emailVerified: true });
}, 150_000);
