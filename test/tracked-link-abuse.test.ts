import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { messagingTokens, verifiedDomain, waitForMail } from './support/messaging.js';

// The platform's public host is no open redirector for a sender's phishing: the tracked links of a suspended or
// deleted project, to a blocked domain, or to no plain web address answer a warning page instead of a redirect.

const hook = (body: unknown) =>
  call('POST', '/webhooks/generic', body, { headers: { 'x-webhook-secret': platform.env.WEBHOOK_SECRET } });

/** Sends `body` to `count` fresh addresses: the email ids, and the tracked links and pixel of the first mail. */
async function send(t: Tenant, from: string, body: string, count = 1) {
  const to = Array.from({ length: count }, () => uniqueEmail('links'));
  const res = await call('POST', '/v1/send', { to, from, subject: 'Offer', body }, { key: t.secretKey });
  expect(res.status).toBe(200);
  const [mail] = await waitForMail(to[0]);
  const html = String(mail.parsed.html);
  return {
    html,
    emailIds: res.body.data.emails.map((e: { email: string }) => e.email) as string[],
    links: [...html.matchAll(/href="([^"]+\/t\/c\/[^"]+)"/g)].map((m) => m[1]),
    pixel: /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1],
  };
}

/** A GET of a tracked link, not followed: its status, Location and body. */
async function follow(url: string, method = 'GET') {
  const res = await fetch(url, { method, redirect: 'manual' });
  return {
    status: res.status,
    location: res.headers.get('location'),
    type: res.headers.get('content-type'),
    body: await res.text(),
  };
}

/** The warning page: the given status, the destination as text and no link or redirect to it. */
async function expectWarning(url: string, status: number, destination: string, why: RegExp) {
  const page = await follow(url);
  expect(page).toMatchObject({ status, location: null });
  expect(page.type).toMatch(/text\/html/);
  expect(page.body).toMatch(why);
  const asText = destination.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  expect(page.body).toContain(`<code style="word-break:break-all">${asText}</code>`);
  expect(page.body).not.toMatch(/<a\b|http-equiv/i);
  expect((await follow(url, 'HEAD')).status).toBe(status);
}

const clicks = async (t: Tenant, emailId: string) =>
  (await call('GET', `/emails/${emailId}`, undefined, { key: t.secretKey })).body.clicks as number;

describe('tracked links that do not redirect', () => {
  test("a suspended project's links show a warning page until reinstated; its pixel keeps answering", async () => {
    const t = await newTenant();
    const from = `news@${(await verifiedDomain(t)).domain}`;
    const destination = 'https://example.org/offer?a=1&b=<2>';
    const body = '<p><a href="https://example.org/offer?a=1&amp;b=&lt;2&gt;">Offer</a></p>';
    // 100 emails (the volume a suspension needs), then one complaint in 100 suspends the project.
    const first = await send(t, from, body, 50);
    const second = await send(t, from, '<p>hello</p>', 50);
    const [link] = first.links;
    expect(await follow(link)).toMatchObject({ status: 302, location: 'https://example.org/offer?a=1&b=%3C2%3E' });
    await eventually(
      async () => {
        const s = await call('GET', `/projects/${t.projectId}/security`, undefined, { cookie: t.cookie });
        return s.body.windows[0].sent === 100 ? true : undefined;
      },
      30_000,
      '100 emails sent',
    );
    expect((await hook({ type: 'complaint', emailId: second.emailIds[3] })).body).toMatchObject({ processed: 1 });

    // Messaging drops its cached view of the project when identity.project.suspended reaches it.
    await eventually(async () => ((await follow(link)).status === 403 ? true : undefined), 15_000, 'link refused');
    await expectWarning(link, 403, destination, /account is suspended/);
    // A token minted before they carried the project id finds it through its email row.
    const tokens = await messagingTokens();
    const olderToken = tokens.sign('click', { emailId: first.emailIds[0], url: destination });
    const older = `${platform.env.PUBLIC_URL}/t/c/${olderToken}`;
    await expectWarning(older, 403, destination, /account is suspended/);
    expect((await fetch(first.pixel)).status).toBe(200);
    // Nothing recorded for a refused link.
    expect(await clicks(t, first.emailIds[0])).toBe(1);

    const lifted = await call('POST', `/users/@me/projects/${t.projectId}/security/reinstate`, undefined, t);
    expect(lifted.status).toBe(200);
    await eventually(async () => ((await follow(link)).status === 302 ? true : undefined), 15_000, 'link redirects');
    expect((await follow(older)).status).toBe(302);
  }, 120_000);

  test("a deleted project's links show a warning page: the sender's account is closed", async () => {
    const t = await newTenant();
    const from = `news@${(await verifiedDomain(t)).domain}`;
    const m = await send(t, from, '<p><a href="https://example.org/deleted">Offer</a></p>');
    expect(await follow(m.links[0])).toMatchObject({ status: 302, location: 'https://example.org/deleted' });

    expect((await call('DELETE', `/users/@me/projects/${t.projectId}`, undefined, { cookie: t.cookie })).status).toBe(
      202,
    );
    await eventually(async () => ((await follow(m.links[0])).status === 410 ? true : undefined), 15_000, 'link gone');
    await expectWarning(m.links[0], 410, 'https://example.org/deleted', /account is closed/);
    // Once every service has wiped the project (its emails included), the pixel still answers: a mail client shows
    // no broken image for mail its sender deleted.
    await eventually(async () => {
      const wipe = await call('GET', `/users/@me/projects/${t.projectId}/reset`, undefined, { cookie: t.cookie });
      return wipe.status === 404 ? true : undefined;
    }, 30_000);
    expect((await fetch(m.pixel)).status).toBe(200);
    await expectWarning(m.links[0], 410, 'https://example.org/deleted', /account is closed/);
  }, 60_000);

  test('links to a blocked domain or its subdomains show a warning page; other links redirect', async () => {
    const t = await newTenant();
    const from = `news@${(await verifiedDomain(t)).domain}`;
    const m = await send(
      t,
      from,
      '<p><a href="https://login.blocked-phish.test/verify">Verify</a> <a href="https://blocked-phish.test">Home</a> ' +
        '<a href="https://notblocked-phish.test/">Other</a></p>',
    );
    expect(m.links).toHaveLength(3);
    await expectWarning(m.links[0], 403, 'https://login.blocked-phish.test/verify', /blocked on this platform/);
    await expectWarning(m.links[1], 403, 'https://blocked-phish.test', /blocked on this platform/);
    expect(await follow(m.links[2])).toMatchObject({ status: 302, location: 'https://notblocked-phish.test/' });
    expect(await clicks(t, m.emailIds[0])).toBe(1);
  });

  test('only plain http(s) URLs are redirected to: credentials untracked when sent, refused when clicked', async () => {
    const t = await newTenant();
    const from = `news@${(await verifiedDomain(t)).domain}`;
    const m = await send(t, from, '<p><a href="https://bank.example@evil.example/login">Bank</a></p>');
    expect(m.links).toEqual([]);
    expect(m.html).toContain('href="https://bank.example@evil.example/login"');

    // Tokens signed for such URLs (older mail): the warning page, never a redirect.
    const tokens = await messagingTokens();
    for (const url of [
      'javascript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'https://u:p@evil.example/',
    ]) {
      const link = `${platform.env.PUBLIC_URL}/t/c/${tokens.sign('click', { emailId: m.emailIds[0], url })}`;
      await expectWarning(link, 403, url, /not a plain web address/);
    }
  });
});
