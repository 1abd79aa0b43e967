import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { call, eventually, expectEnvelope, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { messagingTokens, verifiedDomain, waitForMail } from './support/messaging.js';
import { ROOT } from './support/processes.js';

// The platform as an attacker on the web sees it, without an API key: the links in mail (tracking, subscription
// pages), the headers of every answer, a signed-in browser visiting another site, and /v1/track called by a web
// page of another origin.

const execFileAsync = promisify(execFile);
const CHROMIUM = '/usr/bin/chromium';

let t: Tenant;
let domain: string;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
});

/** Sends one MARKETING mail with a link and answers its email id, open pixel, tracked link and unsubscribe URL. */
async function sentMail() {
  const to = uniqueEmail('surface');
  const res = await call(
    'POST',
    '/v1/send',
    {
      to,
      subscribed: true,
      from: `news@${domain}`,
      subject: 'Offer',
      body: '<p><a href="https://example.org/offer">See it</a> <a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
    },
    { key: t.secretKey },
  );
  expect(res.status).toBe(200);
  const [mail] = await waitForMail(to);
  const html = String(mail.parsed.html);
  return {
    emailId: res.body.data.emails[0].email as string,
    pixel: /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1],
    click: /href="([^"]+\/t\/c\/[^"]+)"/.exec(html)![1],
    unsubscribe: /href="([^"]+\/unsubscribe\/[^"]+)"/.exec(html)![1],
  };
}

/**
 * GET `url` as a client at `localAddress` (another loopback address is another client to the gateway) with `headers`:
 * its status and Location.
 */
function getFrom(url: string, localAddress: string, headers: Record<string, string> = {}) {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  return new Promise<{ status: number; location?: string }>((resolve, reject) => {
    http
      .get(u, { localAddress, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
      })
      .on('error', reject);
  });
}

const counters = async (emailId: string) => {
  const e = await call('GET', `/emails/${emailId}`, undefined, { key: t.secretKey });
  return { opens: e.body.opens as number, clicks: e.body.clicks as number };
};

describe('links in mail', () => {
  test('HEAD and a browser prefetch are answered like GET but count no open or click (link scanners)', async () => {
    const m = await sentMail();
    const head = await fetch(m.click, { method: 'HEAD', redirect: 'manual' });
    expect(head.status).toBe(302);
    expect(head.headers.get('location')).toBe('https://example.org/offer');
    for (const header of ['sec-purpose', 'purpose', 'x-moz']) {
      const prefetched = await fetch(m.click, { headers: { [header]: 'prefetch' }, redirect: 'manual' });
      expect(prefetched.status).toBe(302);
    }
    const pixelHead = await fetch(m.pixel, { method: 'HEAD' });
    expect(pixelHead.status).toBe(200);
    expect(pixelHead.headers.get('content-type')).toMatch(/image\/gif/);
    // A tampered token is still refused on HEAD.
    expect((await fetch(`${m.click}x`, { method: 'HEAD', redirect: 'manual' })).status).toBe(404);
    // The counters move in the same transaction as the answer: HEAD and prefetch recorded nothing.
    expect(await counters(m.emailId)).toEqual({ opens: 0, clicks: 0 });

    // A person's GET counts, once each.
    expect((await fetch(m.click, { redirect: 'manual' })).status).toBe(302);
    expect((await fetch(m.pixel)).status).toBe(200);
    expect(await counters(m.emailId)).toEqual({ opens: 1, clicks: 1 });
    const activity = await eventually(async () => {
      const a = await call('GET', `/activity?type=email.open,email.click`, undefined, { key: t.secretKey });
      const mine = a.body.data.filter((x: { emailId: string }) => x.emailId === m.emailId);
      return mine.length >= 2 ? mine : undefined;
    });
    expect(activity).toHaveLength(2);
  });

  test('a replayed pixel or link is answered alike, recorded once per email and link per window', async () => {
    const to = uniqueEmail('replay');
    const body = '<p><a href="https://example.org/a">A</a> <a href="https://example.org/b">B</a></p>';
    const res = await call(
      'POST',
      '/v1/send',
      { to, from: `news@${domain}`, subject: 'Two links', body },
      {
        key: t.secretKey,
      },
    );
    expect(res.status).toBe(200);
    const emailId = res.body.data.emails[0].email as string;
    const html = String((await waitForMail(to))[0].parsed.html);
    const pixel = /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1];
    const [a, b] = [...html.matchAll(/href="([^"]+\/t\/c\/[^"]+)"/g)].map((x) => x[1].replace(/&amp;/g, '&'));
    for (let i = 0; i < 3; i++) {
      const gif = await fetch(pixel);
      expect(gif.status).toBe(200);
      expect(gif.headers.get('content-type')).toMatch(/image\/gif/);
      const go = await fetch(a, { redirect: 'manual' });
      expect(go.status).toBe(302);
      expect(go.headers.get('location')).toBe('https://example.org/a');
    }
    // From another client: one client following a second link within seconds is a burst (automated, below).
    const other = await getFrom(b, '127.0.0.2');
    expect(other.location).toBe('https://example.org/b');
    // One open, one click of each link: the counters move in the transaction of the answer.
    expect(await counters(emailId)).toEqual({ opens: 1, clicks: 2 });
    const mine = await eventually(async () => {
      const r = await call('GET', '/activity?type=email.open,email.click', undefined, { key: t.secretKey });
      const rows = r.body.data.filter((x: { emailId: string }) => x.emailId === emailId);
      return rows.length >= 3 ? rows : undefined;
    });
    const seen = mine.map(
      (x: { type: string; data: { url?: string; isFirstOpen?: boolean; isFirstClick?: boolean } }) =>
        x.type === 'email.open' ? `open ${x.data.isFirstOpen}` : `click ${x.data.url} ${x.data.isFirstClick}`,
    );
    expect(seen.sort()).toEqual(['click https://example.org/a true', 'click https://example.org/b false', 'open true']);
  });

  test('a pixel or link issued over TRACKING_RECORD_DAYS (365) ago still answers, and records nothing', async () => {
    const m = await sentMail();
    const issued = (url: string) => {
      const body = url.slice(url.lastIndexOf('/') + 1).split('.')[0];
      return JSON.parse(Buffer.from(body, 'base64url').toString()).iat as number;
    };
    // The mail's tokens carry their issue time (signed): the age is decided without reading the email.
    expect(Math.abs(issued(m.pixel) - Date.now() / 1000)).toBeLessThan(600);
    expect(issued(m.click)).toBe(issued(m.pixel));
    // Tokens of the same email minted by messaging's own code with a time 366 days back.
    const tokens = await messagingTokens();
    const iat = Math.floor(Date.now() / 1000) - 366 * 86_400;
    const oldPixel = `${platform.env.PUBLIC_URL}/t/o/${tokens.sign('open', { emailId: m.emailId, iat })}`;
    const oldLink = `${platform.env.PUBLIC_URL}/t/c/${tokens.sign('click', {
      emailId: m.emailId,
      url: 'https://example.org/offer',
      iat,
    })}`;
    const gif = await fetch(oldPixel);
    expect(gif.status).toBe(200);
    expect(gif.headers.get('content-type')).toMatch(/image\/gif/);
    const go = await fetch(oldLink, { redirect: 'manual' });
    expect(go.status).toBe(302);
    expect(go.headers.get('location')).toBe('https://example.org/offer');
    expect(await counters(m.emailId)).toEqual({ opens: 0, clicks: 0 });
    // The mail's own (young) pixel and link are recorded: the aged hits took no repeat window either.
    expect((await fetch(m.pixel)).status).toBe(200);
    expect((await fetch(m.click, { redirect: 'manual' })).status).toBe(302);
    expect(await counters(m.emailId)).toEqual({ opens: 1, clicks: 1 });
    // A token from before issue times existed (none in it) has no age: still recorded.
    const before = await sentMail();
    expect(
      (await fetch(`${platform.env.PUBLIC_URL}/t/o/${tokens.sign('open', { emailId: before.emailId })}`)).status,
    ).toBe(200);
    expect(await counters(before.emailId)).toEqual({ opens: 1, clicks: 0 });
  });

  test('the subscription pages cannot be framed and send no Referer (the token is in the URL)', async () => {
    const m = await sentMail();
    for (const url of [m.unsubscribe, m.unsubscribe.replace('/unsubscribe/', '/manage/')]) {
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });
});

describe('automated hits (mail scanners, link checkers, bots)', () => {
  const CHROME =
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
  const GMAIL_PROXY = 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)';
  const messagingMetrics: string = JSON.parse(readFileSync(path.join(ROOT, '.test-run', 'platform.json'), 'utf8'))
    .metricsUrls.messaging;

  /** tracking_automated_hits_total{kind, reason} of the messaging process (0 before the first). */
  async function automated(kind: string, reason: string): Promise<number> {
    const text = await (await fetch(messagingMetrics)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`tracking_automated_hits_total{kind="${kind}",reason="${reason}"}`));
    return line ? Number(line.split(' ').pop()) : 0;
  }

  /** A sent mail with links to https://example.org/a, /b, /c: its email id, pixel and tracked links. */
  async function threeLinks() {
    const to = uniqueEmail('scanned');
    const body =
      '<p><a href="https://example.org/a">A</a> <a href="https://example.org/b">B</a> ' +
      '<a href="https://example.org/c">C</a></p>';
    const res = await call(
      'POST',
      '/v1/send',
      { to, from: `news@${domain}`, subject: 'Links', body },
      {
        key: t.secretKey,
      },
    );
    expect(res.status).toBe(200);
    const html = String((await waitForMail(to))[0].parsed.html);
    return {
      emailId: res.body.data.emails[0].email as string,
      pixel: /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1],
      links: [...html.matchAll(/href="([^"]+\/t\/c\/[^"]+)"/g)].map((x) => x[1].replace(/&amp;/g, '&')),
    };
  }

  /** The email's recorded open and click events, as `open` / `click <url>`, once `n` are there. */
  async function events(emailId: string, n: number): Promise<string[]> {
    const rows = await eventually(async () => {
      const r = await call('GET', '/activity?type=email.open,email.click', undefined, { key: t.secretKey });
      const mine = r.body.data.filter((x: { emailId: string }) => x.emailId === emailId);
      return mine.length >= n ? mine : undefined;
    });
    return rows
      .map((x: { type: string; data: { url?: string } }) => (x.type === 'email.open' ? 'open' : `click ${x.data.url}`))
      .sort();
  }

  test("a scanner's or bot's click and open are answered and record nothing (no count, no event)", async () => {
    const m = await threeLinks();
    const [clicksBefore, opensBefore] = [await automated('click', 'user_agent'), await automated('open', 'user_agent')];
    for (const ua of ['Barracuda Sentinel (EE)', `${CHROME.replace('Chrome/', 'HeadlessChrome/')}`]) {
      const go = await fetch(m.links[0], { headers: { 'user-agent': ua }, redirect: 'manual' });
      expect(go.status).toBe(302);
      expect(go.headers.get('location')).toBe('https://example.org/a');
    }
    const gif = await fetch(m.pixel, { headers: { 'user-agent': 'Mozilla/5.0 (compatible; bingbot/2.0)' } });
    expect(gif.status).toBe(200);
    expect(gif.headers.get('content-type')).toMatch(/image\/gif/);
    // The counters move in the transaction of the answer: nothing was recorded.
    expect(await counters(m.emailId)).toEqual({ opens: 0, clicks: 0 });
    expect(await automated('click', 'user_agent')).toBe(clicksBefore + 2);
    expect(await automated('open', 'user_agent')).toBe(opensBefore + 1);
    // The person's click of the same link right after is recorded: the scanner took no repeat window.
    expect((await fetch(m.links[0], { headers: { 'user-agent': CHROME }, redirect: 'manual' })).status).toBe(302);
    expect(await counters(m.emailId)).toEqual({ opens: 0, clicks: 1 });
    expect(await events(m.emailId, 1)).toEqual(['click https://example.org/a']);
  });

  test('a burst of links of one email from one client records only its first; another client records', async () => {
    const m = await threeLinks();
    const before = await automated('click', 'burst');
    const scanner = { 'user-agent': CHROME };
    for (const [i, link] of m.links.entries()) {
      const go = await getFrom(link, '127.0.0.3', scanner);
      expect(go).toEqual({ status: 302, location: `https://example.org/${'abc'[i]}` });
    }
    expect(await counters(m.emailId)).toEqual({ opens: 0, clicks: 1 });
    expect(await automated('click', 'burst')).toBe(before + 2);
    expect(await getFrom(m.links[1], '127.0.0.4', scanner)).toEqual({ status: 302, location: 'https://example.org/b' });
    expect(await counters(m.emailId)).toEqual({ opens: 0, clicks: 2 });
    expect(await events(m.emailId, 2)).toEqual(['click https://example.org/a', 'click https://example.org/b']);
  });

  test("Gmail's image proxy fetching the pixel is a person's open; a crawler's fetch is not", async () => {
    const m = await threeLinks();
    const crawler = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
    expect((await fetch(m.pixel, { headers: { 'user-agent': crawler } })).status).toBe(200);
    expect(await counters(m.emailId)).toEqual({ opens: 0, clicks: 0 });
    expect((await fetch(m.pixel, { headers: { 'user-agent': GMAIL_PROXY } })).status).toBe(200);
    expect(await counters(m.emailId)).toEqual({ opens: 1, clicks: 0 });
    expect(await events(m.emailId, 1)).toEqual(['open']);
  });
});

describe('headers of every answer', () => {
  test("nosniff, no framing, no cross-origin Referer: API answers, errors, pages, a link's redirect", async () => {
    const m = await sentMail();
    const answers = await Promise.all([
      fetch(`${platform.gatewayUrl}/healthz`),
      fetch(`${platform.gatewayUrl}/contacts`),
      fetch(`${platform.gatewayUrl}/no-such-route`),
      fetch(`${platform.gatewayUrl}/`, { headers: { accept: 'text/html' } }),
      fetch(`${platform.gatewayUrl}/docs`),
      fetch(m.click, { redirect: 'manual' }),
      fetch(`${platform.gatewayUrl}/v1/track`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.publicKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: uniqueEmail('h'), event: 'header-check' }),
      }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 401, 404, 200, 200, 302, 200]);
    for (const a of answers) {
      expect(a.headers.get('x-content-type-options')).toBe('nosniff');
      expect(a.headers.get('x-frame-options')).toBe('DENY');
      expect(a.headers.get('referrer-policy')).toBe('same-origin');
      // Plain http to a loopback PUBLIC_URL (npm start): no HSTS, which would pin localhost to https.
      expect(a.headers.get('strict-transport-security')).toBeNull();
    }
    // TRUST_PROXY is unset here: anyone's X-Forwarded-Proto says nothing.
    const forged = await fetch(`${platform.gatewayUrl}/healthz`, { headers: { 'x-forwarded-proto': 'https' } });
    expect(forged.headers.get('strict-transport-security')).toBeNull();
  });

  test("every HTML page's CSP forbids <base>, lets forms post only here and refuses framing", async () => {
    const m = await sentMail();
    const pages = await Promise.all([
      fetch(`${platform.gatewayUrl}/`, { headers: { accept: 'text/html' } }),
      fetch(`${platform.gatewayUrl}/docs`),
      fetch(`${platform.gatewayUrl}/app`),
      fetch(`${platform.gatewayUrl}/app/login`),
      fetch(m.unsubscribe),
      fetch(m.unsubscribe.replace('/unsubscribe/', '/manage/')),
      fetch(`${m.click}x`),
    ]);
    expect(pages.map((p) => p.status)).toEqual([200, 200, 200, 200, 200, 200, 404]);
    for (const p of pages) {
      expect(p.headers.get('content-type')).toMatch(/text\/html/);
      const csp = (p.headers.get('content-security-policy') ?? '').split(/;\s*/);
      expect(csp).toEqual(expect.arrayContaining(["base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'"]));
    }
  });
});

describe('cross-site requests with the session cookie (CSRF)', () => {
  test("a signed-in change sent from another site's page is 403; the platform's own pages and curl work", async () => {
    const owner = await newTenant();
    const rotate = (headers: Record<string, string>) =>
      call('POST', `/users/@me/projects/${owner.projectId}/regenerate-keys`, undefined, {
        cookie: owner.cookie,
        headers,
      });
    for (const origin of ['http://evil.example', 'https://sub.localhost', 'null']) {
      expectEnvelope(await rotate({ origin }), 403, 'CROSS_SITE_REQUEST');
    }
    // The keys were not rotated.
    expect((await call('GET', '/contacts', undefined, { key: owner.secretKey })).status).toBe(200);
    const consoleApi = await call(
      'POST',
      '/contacts',
      { email: uniqueEmail('c') },
      {
        cookie: owner.cookie,
        headers: { 'x-project-id': owner.projectId, origin: 'http://evil.example' },
      },
    );
    expectEnvelope(consoleApi, 403, 'CROSS_SITE_REQUEST');

    // From the platform's own origin (PUBLIC_URL or the host asked), or without Origin (not a browser): allowed.
    expect((await rotate({ origin: platform.env.PUBLIC_URL })).status).toBe(200);
    expect((await rotate({ origin: platform.gatewayUrl })).status).toBe(200);
    expect((await rotate({})).status).toBe(200);
    // Reading is not a change: a GET with another Origin is answered (a browser keeps the answer from that site).
    expect(
      (await call('GET', '/users/@me', undefined, { cookie: owner.cookie, headers: { origin: 'http://x' } })).status,
    ).toBe(200);
  });
});

describe('signing out (GET /auth/logout stays, SPEC.md)', () => {
  const signedIn = async (cookie: string) => (await call('GET', '/users/@me', undefined, { cookie })).status;
  const logout = (method: 'GET' | 'POST', cookie: string, headers: Record<string, string>) =>
    fetch(`${platform.gatewayUrl}/auth/logout`, { method, headers: { cookie, ...headers }, redirect: 'manual' });

  test('a GET another site started signs nobody out: it answers a page whose form POSTs from here', async () => {
    const { cookie } = await newTenant();
    const elsewhere: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' },
      { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate' },
      // A browser without Fetch Metadata: the Referer (or Origin) names the other site.
      { referer: 'http://evil.example/cats' },
      { origin: 'http://evil.example' },
    ];
    for (const headers of elsewhere) {
      const res = await logout('GET', cookie, headers);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(await res.text()).toContain('<form method="post" action="/auth/logout">');
      expect(await signedIn(cookie)).toBe(200);
    }
    // The POST is a signed-in change: another site's is refused.
    expectEnvelope(
      await call('POST', '/auth/logout', undefined, { cookie, headers: { origin: 'http://x.example' } }),
      403,
      'CROSS_SITE_REQUEST',
    );
    expect(await signedIn(cookie)).toBe(200);
  });

  test("the platform's own pages, a typed URL and curl still sign out by GET; the form's POST too", async () => {
    const own: Record<string, string>[] = [
      { 'sec-fetch-site': 'same-origin' },
      { 'sec-fetch-site': 'none' },
      { referer: `${platform.env.PUBLIC_URL}/app/projects` },
      { referer: `${platform.gatewayUrl}/app` },
      {},
    ];
    for (const headers of own) {
      const { cookie } = await newTenant();
      const res = await logout('GET', cookie, headers);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ success: true });
      expect(res.headers.get('set-cookie')).toMatch(/^svc_session=;/);
      expect(await signedIn(cookie)).toBe(401);
    }
    const { cookie } = await newTenant();
    const form = await logout('POST', cookie, { origin: platform.env.PUBLIC_URL, accept: 'text/html' });
    expect(form.status).toBe(303);
    expect(form.headers.get('location')).toBe('/app/login');
    expect(await signedIn(cookie)).toBe(401);
    const api = await newTenant();
    expect(await (await logout('POST', api.cookie, {})).json()).toEqual({ success: true });
    expect(await signedIn(api.cookie)).toBe(401);
  });

  test('in Chromium: a link on another site asks; the confirmation signs out and opens the sign-in page', async () => {
    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const { cookie } = await newTenant();
    const pair = cookie.split(';')[0];
    const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', LOGOUT_LINK_SCRIPT], {
      cwd: ROOT,
      timeout: 120_000,
      env: {
        ...process.env,
        SURFACE_CHECK: JSON.stringify({
          chromium: CHROMIUM,
          base: platform.gatewayUrl,
          cookieName: name,
          cookieValue: value,
        }),
      },
    });
    const seen = JSON.parse(stdout);
    expect(seen.asked).toBe('Sign out?');
    expect(seen.afterLink).toEqual({ cookie: true, me: 200 });
    expect(seen.confirmedAt).toMatch(/\/app\/login$/);
    expect(seen.afterConfirm).toEqual({ cookie: false, me: 401 });
    expect(await signedIn(cookie)).toBe(401);
  });
});

/** A page on another site (localhost vs the gateway's 127.0.0.1: cross-site) linking to GET /auth/logout. */
const LOGOUT_LINK_SCRIPT = `
import http from 'node:http';
import { chromium } from 'playwright-core';
const c = JSON.parse(process.env.SURFACE_CHECK);
const server = http.createServer((req, res) => {
  res.setHeader('content-type', 'text/html');
  res.end('<!doctype html><a id="cats" href="' + c.base + '/auth/logout">Cute cats</a>');
});
await new Promise((r) => server.listen(0, 'localhost', r));
const browser = await chromium.launch({ executablePath: c.chromium });
const seen = {};
try {
  const context = await browser.newContext();
  await context.addCookies([{ name: c.cookieName, value: c.cookieValue, url: c.base }]);
  const state = async () => ({
    cookie: (await context.cookies(c.base)).some((k) => k.name === c.cookieName),
    me: (await context.request.get(c.base + '/users/@me')).status(),
  });
  const page = await context.newPage();
  await page.goto('http://localhost:' + server.address().port + '/');
  await Promise.all([page.waitForURL(c.base + '/auth/logout'), page.click('#cats')]);
  seen.asked = await page.locator('h1').textContent();
  seen.afterLink = await state();
  await Promise.all([page.waitForURL('**/app/login'), page.getByRole('button', { name: 'Sign out' }).click()]);
  seen.confirmedAt = page.url();
  seen.afterConfirm = await state();
} finally {
  await browser.close();
  server.close();
}
process.stdout.write(JSON.stringify(seen));
`;

/** Another origin's page (a shop using the public key) in Chromium: what it may and may not do to the platform. */
const FOREIGN_PAGE_SCRIPT = `
import http from 'node:http';
import { chromium } from 'playwright-core';
const c = JSON.parse(process.env.SURFACE_CHECK);
const server = http.createServer((req, res) => {
  res.setHeader('content-type', 'text/html');
  res.end('<!doctype html><h1>A shop</h1><iframe id="f" src="' + c.unsubscribe + '"></iframe>');
});
await new Promise((r) => server.listen(0, 'localhost', r));
const shop = 'http://localhost:' + server.address().port;
const browser = await chromium.launch({ executablePath: c.chromium });
const seen = {};
try {
  const context = await browser.newContext();
  // The visitor is signed in to the platform in the same browser.
  await context.addCookies([{ name: c.cookieName, value: c.cookieValue, url: c.base }]);
  const page = await context.newPage();
  await page.goto(shop + '/');
  await page.waitForLoadState('load');
  const frame = page.frames().find((f) => f !== page.mainFrame());
  seen.frameUrl = frame ? frame.url() : null;
  seen.track = await page.evaluate(async (c) => {
    const r = await fetch(c.base + '/v1/track', {
      method: 'POST',
      headers: { authorization: 'Bearer ' + c.publicKey, 'content-type': 'application/json' },
      body: JSON.stringify({ email: c.visitor, event: 'viewed-shop' }),
    });
    return { status: r.status, body: await r.json() };
  }, c);
  seen.withCookie = await page.evaluate(async (c) => {
    try {
      const r = await fetch(c.base + '/contacts', { credentials: 'include', headers: { 'x-project-id': c.projectId } });
      return { status: r.status };
    } catch (e) {
      return { blocked: String(e) };
    }
  }, c);
  seen.readAccount = await page.evaluate(async (c) => {
    try {
      const r = await fetch(c.base + '/users/@me', { credentials: 'include' });
      return { status: r.status };
    } catch (e) {
      return { blocked: String(e) };
    }
  }, c);
} finally {
  await browser.close();
  server.close();
}
process.stdout.write(JSON.stringify(seen));
`;

describe('another origin in a real browser', () => {
  test('a page elsewhere may call /v1/track with the public key, not use the session nor frame a page', async () => {
    // Without a browser: the preflight of /v1/track allows any origin without credentials; no other route has CORS.
    const preflight = await fetch(`${platform.gatewayUrl}/v1/track`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://shop.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/i);
    expect(preflight.headers.get('access-control-allow-credentials')).toBeNull();
    const other = await fetch(`${platform.gatewayUrl}/contacts`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();

    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const m = await sentMail();
    const pair = t.cookie.split(';')[0];
    const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
    const visitor = uniqueEmail('visitor');
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', FOREIGN_PAGE_SCRIPT], {
      cwd: ROOT,
      timeout: 120_000,
      env: {
        ...process.env,
        SURFACE_CHECK: JSON.stringify({
          chromium: CHROMIUM,
          base: platform.gatewayUrl,
          unsubscribe: m.unsubscribe,
          cookieName: name,
          cookieValue: value,
          publicKey: t.publicKey,
          projectId: t.projectId,
          visitor,
        }),
      },
    });
    const seen = JSON.parse(stdout);
    expect(seen.track).toMatchObject({ status: 200, body: { success: true } });
    const contact = await eventually(async () => {
      const r = await call('GET', `/contacts?search=${encodeURIComponent(visitor)}`, undefined, { key: t.secretKey });
      return r.body.data?.[0];
    });
    expect(contact.email).toBe(visitor);
    // The console's session is no credential for another origin: the preflight grants no credentials.
    expect(seen.withCookie.blocked).toMatch(/Failed to fetch/);
    expect(seen.readAccount.blocked).toMatch(/Failed to fetch/);
    // The unsubscribe page refused to be framed: Chromium shows its error page instead.
    expect(seen.frameUrl).not.toBe(m.unsubscribe);
  });
});

const LOGIN_ERROR_SCRIPT = `
import { chromium } from 'playwright-core';
const c = JSON.parse(process.env.SURFACE_CHECK);
const browser = await chromium.launch({ executablePath: c.chromium });
const seen = {};
try {
  const page = await browser.newPage();
  for (const [name, error] of Object.entries(c.errors)) {
    await page.goto(c.base + '/app/login?error=' + encodeURIComponent(error));
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    seen[name] = { alert: await page.getByRole('alert').textContent(), body: await page.locator('body').textContent() };
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen));
`;

describe('the console login page', () => {
  test("?error= shows a known code's message, and never the text of an unknown one (content injection)", async () => {
    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const injected = 'Your account is locked. Call +1 555 0100 now';
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', LOGIN_ERROR_SCRIPT], {
      cwd: ROOT,
      timeout: 120_000,
      env: {
        ...process.env,
        SURFACE_CHECK: JSON.stringify({
          chromium: CHROMIUM,
          base: platform.gatewayUrl,
          errors: { known: 'oauth_denied', injected, inherited: 'constructor' },
        }),
      },
    });
    const seen = JSON.parse(stdout);
    expect(seen.known.alert).toBe('You declined the sign-in at the provider.');
    expect(seen.injected.body).not.toContain('555 0100');
    expect(seen.injected.alert).toBe('Sign-in with the provider failed. Try again.');
    expect(seen.inherited.alert).toBe('Sign-in with the provider failed. Try again.');
  });
});
