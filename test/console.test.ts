import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { call, newTenant, platform, signUp, uniqueEmail } from './support/client.js';
import { ROOT } from './support/processes.js';
import { receivedMail, uniqueDomain, waitForMail } from './support/messaging.js';

const execFileAsync = promisify(execFile);
const CHROMIUM = '/usr/bin/chromium';
const infra = platform as unknown as { smtp: { controlUrl: string }; dns: { controlUrl: string } };

// The console at /app, driven the way a person uses it: a real Chromium, the shared distributed platform, the
// loopback DNS server for the domain and the SMTP sink for the campaign's mail. Nothing is set up through the
// API behind the browser's back except the DNS zone (the person's DNS provider) and one /v1/track (their app).
const JOURNEY = `
import { chromium } from 'playwright-core';
const c = JSON.parse(process.env.CONSOLE_CHECK);
const browser = await chromium.launch({ executablePath: c.chromium });
const seen = {};
const text = async (page, id) => (await page.getByTestId(id).textContent()).trim();
const until = async (fn, what, ms = 30000) => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error('not reached: ' + what);
    await new Promise((r) => setTimeout(r, 250));
  }
};
try {
  const page = await browser.newPage({ viewport: { width: 1366, height: 850 } });
  const shot = (name) => c.shots && page.screenshot({ path: c.shots + '/' + name + '.png', fullPage: true });
  const nav = (name) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();

  // Signed out, /app is the log-in page; a wrong password is answered in place.
  await page.goto(c.base + '/app');
  await page.waitForURL(c.base + '/app/login');
  await page.getByLabel('Email').fill(c.email);
  await page.getByLabel('Password').fill('wrong-password-1');
  await page.getByRole('button', { name: 'Log in' }).click();
  seen.loginError = await page.getByRole('alert').textContent();

  // Sign up; a too-short password shows the API's field message next to the field.
  await page.getByRole('link', { name: 'Create an account' }).click();
  await page.getByLabel('Email').fill(c.email);
  await page.getByLabel('Password').fill('short');
  await page.getByRole('button', { name: 'Sign up' }).click();
  seen.passwordError = await page.locator('.field-error').first().textContent();
  await page.getByLabel('Password').fill('a-long-password-1');
  await page.getByRole('button', { name: 'Sign up' }).click();

  await page.getByLabel('Project name').fill('Console shop');
  await page.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL(c.base + '/app/settings');
  seen.secretKey = await text(page, 'Secret key');
  seen.publicKey = await text(page, 'Public key');
  await shot('settings');
  const projectId = await page.evaluate(() => localStorage.getItem('project'));
  const api = (path) =>
    page.request.get(c.base + path, { headers: { 'x-project-id': projectId } }).then((r) => r.json());

  // A sending domain: add it, publish its records at the DNS provider, verify.
  await nav('Domains');
  await page.getByLabel('Domain to send from').fill(c.domain);
  await page.getByRole('button', { name: 'Add domain' }).click();
  const card = page.getByRole('article', { name: c.domain });
  await card.waitFor();
  seen.pendingBadge = await card.locator('.badge').textContent();
  const [domain] = await api('/domains/project/' + projectId);
  for (const r of domain.records) {
    const record = JSON.stringify({ name: r.name, type: r.type, value: r.value });
    await fetch(c.dns + '/records', { method: 'POST', body: record });
  }
  await card.getByRole('button', { name: 'Verify now' }).click();
  await until(async () => (await card.locator('.badge').textContent()) === 'verified', 'domain verified');
  seen.verifiedBadge = await card.locator('.badge').textContent();
  await shot('domains');

  // A template: a Liquid mistake is shown with its line; fixed, the server's preview renders the sample data.
  await nav('Templates');
  await page.getByRole('link', { name: 'New template' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Welcome');
  await page.getByLabel('Subject').fill('Hello {{firstName}}');
  await page.getByLabel('From (email)').fill('news@' + c.domain);
  await page.getByLabel('Body (HTML with Liquid)').fill('<p>Hi</p>\\n{% if firstName %}<b>{{firstName}}</b>');
  seen.liquidError = await page.getByTestId('liquid-error').textContent();
  await page.getByLabel('Body (HTML with Liquid)').fill('<p>Hi {{firstName}}, your plan is {{plan ?? "free"}}.</p>');
  await until(async () => (await text(page, 'preview-subject')) === 'Hello Ann', 'preview subject');
  seen.previewSubject = await text(page, 'preview-subject');
  seen.previewBody = await page.frameLocator('iframe[title="Preview"]').locator('p').textContent();
  await page.getByRole('button', { name: 'Create template' }).click();
  await page.waitForURL(/\\/app\\/templates\\/[0-9a-f-]{36}$/);
  await shot('template-editor');

  // Contacts from a CSV file, with the bad row reported.
  await nav('Contacts');
  await page.getByRole('link', { name: 'Import CSV' }).click();
  const file = { name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(c.csv) };
  await page.getByLabel('CSV file').setInputFiles(file);
  await page.getByRole('button', { name: 'Import' }).click();
  await until(async () => (await text(page, 'import-status')) === 'completed', 'import completed');
  seen.imported = await text(page, 'import-imported');
  seen.importErrors = await page.getByRole('table').textContent();
  await nav('Contacts');
  await page.getByRole('link', { name: c.pro[0] }).waitFor();
  seen.contactsTable = await page.getByRole('table').textContent();
  await shot('contacts');

  // A segment of the pro plan, with its live count.
  await nav('Segments');
  await page.getByRole('link', { name: 'New segment' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Pro plan');
  await page.getByRole('button', { name: 'Add filter' }).click();
  await page.getByLabel('Field').selectOption('data.plan');
  await page.getByLabel('Operator').selectOption('equals');
  await page.getByLabel('Value').fill('pro');
  await until(async () => (await text(page, 'audience-count')) === '2', 'segment count 2');
  seen.segmentCount = await text(page, 'audience-count');
  await shot('segment-builder');
  await page.getByRole('button', { name: 'Create segment' }).click();
  await page.waitForURL(/\\/app\\/segments\\/[0-9a-f-]{36}$/);

  // A campaign to that segment, sent now; its statistics count what went out.
  await nav('Campaigns');
  await page.getByRole('link', { name: 'New campaign' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Pro news');
  await page.getByLabel('Subject').fill('News for {{firstName}}');
  await page.getByLabel('From (email)').fill('news@' + c.domain);
  await page.getByLabel('Audience').selectOption('SEGMENT');
  await page.getByLabel('Segment').selectOption({ label: 'Pro plan (2 contacts)' });
  await page.getByRole('button', { name: 'Create campaign' }).click();
  await page.waitForURL(/\\/app\\/campaigns\\/[0-9a-f-]{36}$/);
  await page.getByRole('button', { name: 'Send now' }).click();
  await until(async () => (await text(page, 'stat-sent')) === '2', 'campaign stats: 2 sent', 45000);
  seen.campaignSent = await text(page, 'stat-sent');
  seen.campaignRecipients = await text(page, 'stat-totalRecipients');
  await page.getByRole('region', { name: 'Statistics' }).getByRole('img', { name: 'Emails over time' }).waitFor();
  const campaignId = page.url().split('/').pop();
  seen.campaignSeries = (await api('/analytics/timeseries?interval=hour&campaignId=' + campaignId)).totals;
  seen.otherCampaign = (await api('/analytics/timeseries?campaignId=' + c.otherId)).totals.sent;
  seen.badCampaign = await api('/analytics/timeseries?campaignId=nope').then((b) => b.error.code);
  await shot('campaign-stats');

  // A two-step workflow: trigger -> update contact; enabled, triggered by the app, its execution completes.
  await nav('Workflows');
  await page.getByLabel('Name', { exact: true }).fill('Onboarding');
  await page.getByLabel('Trigger event').fill('signed-up');
  await page.getByRole('button', { name: 'New workflow' }).click();
  await page.waitForURL(/\\/app\\/workflows\\/[0-9a-f-]{36}$/);
  await page.getByRole('button', { name: 'Enable' }).waitFor();
  await page.getByLabel('Type').selectOption('UPDATE_CONTACT');
  await page.getByRole('button', { name: 'Add step' }).click();
  await page.getByRole('button', { name: /^UPDATE_CONTACT/ }).waitFor();
  // Enabling with the new step unconnected: the API's graph error is shown and the step is marked.
  await page.getByRole('button', { name: 'Enable' }).click();
  seen.enableError = await page.getByRole('alert').textContent();
  seen.invalidMarked = await page.locator('.node.invalid').count();
  const form = page.getByRole('form', { name: 'Connect steps' });
  await form.getByLabel('From').selectOption({ label: 'Trigger (TRIGGER)' });
  await form.getByLabel('To').selectOption({ index: 1 });
  await form.getByRole('button', { name: 'Connect' }).click();
  await page.locator('svg.graph line').waitFor({ state: 'attached' });
  await page.getByRole('button', { name: 'Enable' }).click();
  await until(async () => (await text(page, 'workflow-enabled')) === 'enabled', 'workflow enabled');
  await shot('workflow');
  const tracked = await fetch(c.base + '/v1/track', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + seen.publicKey, 'content-type': 'application/json' },
    body: JSON.stringify({ email: c.pro[0], event: 'signed-up' }),
  });
  seen.track = tracked.status + ' ' + (await tracked.text());
  await until(async () => {
    await page.getByRole('button', { name: 'Refresh' }).click();
    return (await page.getByTestId('execution-status').first().textContent()) === 'COMPLETED';
  }, 'execution completed (track: ' + seen.track + ')', 60000);
  await page.getByRole('button', { name: 'History' }).first().click();
  seen.history = await page.getByRole('list', { name: 'Step history' }).textContent();

  // The activity feed and analytics render what happened.
  await nav('Activity');
  await page.getByRole('table').waitFor();
  seen.activity = await page.getByRole('table').textContent();
  await nav('Analytics');
  await page.getByRole('img', { name: 'Emails over time' }).waitFor();
  await shot('analytics');

  // Billing: the campaign's two emails counted for this period; a cap set; no payment provider here.
  await nav('Billing');
  await until(async () => Number(await text(page, 'used-emails')) >= 2, 'emails counted');
  seen.usedEmails = await text(page, 'used-emails');
  await page.getByLabel('Emails this month').fill('1000');
  await page.getByRole('button', { name: 'Save caps' }).click();
  seen.capSaved = await page.getByText('Caps saved.').textContent();
  seen.noProvider = await page.getByText('No payment provider is configured').count();
  await page.getByLabel('Contacts').fill('-3');
  await page.getByRole('button', { name: 'Save caps' }).click();
  seen.capError = await page.locator('.field-error').first().textContent();

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(c.base + '/app/login');
  // The session ended at the gateway (POST /auth/logout), not only in the page.
  seen.loggedOut = (await page.context().request.get(c.base + '/users/@me')).status() === 401;
} catch (err) {
  // Where it stopped: the page's text and URL, for the test's failure message.
  const page = browser.contexts()[0]?.pages()[0];
  const where = page ? page.url() + ' ' + (await page.locator('main').textContent().catch(() => '')) : '';
  throw new Error(err.message + ' --- page at failure: ' + where.slice(0, 2000));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen));
`;

// The account pages: the overview's "send the verification email again", the link from that mail, a forgotten
// password from the log-in page, the reset link from its mail, and logging in with the new password.
const ACCOUNT = `
import { chromium } from 'playwright-core';
import { simpleParser } from 'mailparser';
const c = JSON.parse(process.env.CONSOLE_CHECK);
const browser = await chromium.launch({ executablePath: c.chromium });
const seen = {};
const linkIn = async (page, count) => {
  for (const end = Date.now() + 30000; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
    const list = await (await fetch(c.smtp + '/messages?to=' + encodeURIComponent(c.email))).json();
    if (list.length < count) continue;
    const mail = await simpleParser(Buffer.from(list[count - 1].raw, 'base64'));
    const marker = '/app/' + page + '?token=';
    const at = mail.text.indexOf(marker);
    if (at >= 0) return c.base + marker + mail.text.slice(at + marker.length).match(/^[A-Za-z0-9_-]+/)[0];
  }
  throw new Error('no ' + page + ' mail');
};
try {
  const page = await browser.newPage();
  await page.goto(c.base + '/app/signup');
  await page.getByLabel('Email').fill(c.email);
  await page.getByLabel('Password').fill('first-password-1');
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByLabel('Project name').fill('Mine');
  await page.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL(c.base + '/app/settings');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click();
  await page.getByRole('button', { name: 'Send the verification email again' }).click();
  const verify = await linkIn('verify', 1);
  await page.goto(verify);
  seen.verified = await page.getByRole('status').textContent();
  await page.goto(c.base + '/app');
  seen.noticeAfter = await page.getByText('is not verified yet').count();
  const heldKeys = () => page.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith('keys:')).length);
  seen.keysBeforeLogout = await heldKeys();
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(c.base + '/app/login');
  seen.keysAfterLogout = await heldKeys();
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  await page.getByLabel('Email').fill(c.email);
  await page.getByRole('button', { name: 'Send the link' }).click();
  seen.requested = await page.getByRole('status').textContent();
  const reset = await linkIn('reset', 2);
  await page.goto(reset);
  await page.getByLabel('New password').fill('second-password-2');
  await page.getByRole('button', { name: 'Change password' }).click();
  seen.changed = await page.getByRole('status').textContent();
  // The same link again: the token is single-use, and the answer says so in place.
  await page.goto(reset);
  await page.getByLabel('New password').fill('third-password-3');
  await page.getByRole('button', { name: 'Change password' }).click();
  seen.reused = await page.getByRole('alert').textContent();
  await page.goto(c.base + '/app/login');
  await page.getByLabel('Email').fill(c.email);
  await page.getByLabel('Password').fill('second-password-2');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(c.base + '/app');
  seen.projectAfterLogin = await page.locator('#project-switch option').first().textContent();
  // Another account invites this one; the invitation is accepted in Settings and the project joins the switcher.
  await fetch(c.base + '/projects/' + c.owner.projectId + '/members', {
    method: 'POST',
    headers: { cookie: c.owner.cookie, 'content-type': 'application/json' },
    body: JSON.stringify({ email: c.email, role: 'member' }),
  });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
  const invitations = page.getByRole('region', { name: 'Your invitations' });
  await invitations.getByRole('button', { name: 'Accept' }).click();
  await invitations.waitFor({ state: 'detached' });
  seen.projectsAfterAccept = await page.locator('#project-switch option').allTextContents();
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen));
`;

/** Runs a Playwright script in its own Node process (Playwright's disposables fail inside Jest's VM modules). */
async function inBrowser(script: string, check: Record<string, unknown>): Promise<Record<string, any>> {
  const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    timeout: 240_000,
    maxBuffer: 10 * 1024 * 1024,
    env: { ...process.env, CONSOLE_CHECK: JSON.stringify({ chromium: CHROMIUM, base: platform.gatewayUrl, ...check }) },
  });
  return JSON.parse(stdout);
}

describe('the web console (/app) in a real browser', () => {
  test('the gateway serves the console: the page, its bundle, client-side routes; not other methods', async () => {
    for (const path of ['/app', '/app/contacts/some-id']) {
      const res = await fetch(`${platform.gatewayUrl}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(await res.text()).toContain('/app/assets/app.js');
    }
    const js = await fetch(`${platform.gatewayUrl}/app/assets/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('javascript');
    expect((await js.text()).length).toBeGreaterThan(10_000);
    const css = await fetch(`${platform.gatewayUrl}/app/assets/style.css`);
    expect(css.headers.get('content-type')).toContain('text/css');
    expect((await fetch(`${platform.gatewayUrl}/app/assets/nope.js`)).status).toBe(404);
    expect((await call('POST', '/app')).status).toBe(405);
  });

  test('API routes take the session cookie with X-Project-Id, only for a project of the signed-in user', async () => {
    const ann = (await signUp(uniqueEmail('console'))).cookie;
    const bob = (await signUp(uniqueEmail('console'))).cookie;
    const project = await call('POST', '/users/@me/projects', { name: 'Ann' }, { cookie: ann });
    const asAnn = { cookie: ann, headers: { 'x-project-id': project.body.id } };
    const created = await call('POST', '/contacts', { email: 'visitor@example.com' }, asAnn);
    expect(created.status).toBe(201);
    const listed = await call('GET', '/contacts', undefined, asAnn);
    expect(listed.body.data.map((x: { email: string }) => x.email)).toEqual(['visitor@example.com']);
    // The same contact through the secret key: one project, two ways in.
    const viaKey = await call('GET', '/contacts', undefined, { key: project.body.secretKey });
    expect(viaKey.body.total).toBe(1);
    // Bob may not reach Ann's project; a cookie without the header, or the header without a cookie, is no key.
    const bobs = await call('GET', '/contacts', undefined, {
      cookie: bob,
      headers: { 'x-project-id': project.body.id },
    });
    expect(bobs.status).toBe(404);
    expect((await call('GET', '/contacts', undefined, { cookie: ann })).status).toBe(401);
    const noCookie = await call('GET', '/contacts', undefined, { headers: { 'x-project-id': project.body.id } });
    expect(noCookie.status).toBe(401);
    expect(noCookie.body.error.code).toBe('UNAUTHORIZED');
    const bogus = await call('GET', '/contacts', undefined, { cookie: ann, headers: { 'x-project-id': 'not-a-uuid' } });
    expect(bogus.status).toBe(404);
  });

  test('template preview renders with sample data; Liquid errors name the field and line', async () => {
    const { cookie } = await signUp(uniqueEmail('preview'));
    const project = await call('POST', '/users/@me/projects', { name: 'P' }, { cookie });
    const key = project.body.secretKey;
    const ok = await call(
      'POST',
      '/templates/preview',
      {
        subject: 'Hi {{firstName}}',
        body: '<p>{{firstName | upcase}} {{note}}</p>',
        data: { firstName: 'Ann', note: '<i>' },
      },
      { key },
    );
    expect(ok.status).toBe(200);
    // Values are HTML-escaped in the body as when sending.
    expect(ok.body).toEqual({ subject: 'Hi Ann', body: '<p>ANN &lt;i&gt;</p>' });
    const bad = await call('POST', '/templates/preview', { subject: '{{ a | nope }}', body: 'x\n{% if a %}' }, { key });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors.map((e: { field: string }) => e.field).sort()).toEqual(['body', 'subject']);
    expect(bad.body.error.errors.find((e: { field: string }) => e.field === 'body').message).toMatch(/line:2/);
    const wrongType = await call('POST', '/templates/preview', { subject: 'x', body: 'y', data: [1] }, { key });
    expect(wrongType.status).toBe(422);
    expect((await call('POST', '/templates/preview', { subject: 'x', body: '' }, { key })).status).toBe(422);
  });

  test('a journey: sign up, project, domain, template, import, segment, campaign, workflow, activity', async () => {
    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const domain = uniqueDomain('console');
    const pro = [uniqueEmail('pro-a'), uniqueEmail('pro-b')];
    const free = uniqueEmail('free');
    const csv = `email,firstName,plan\n${pro[0]},Ann,pro\n${pro[1]},Bo,pro\n${free},Cy,free\nnot-an-email,X,pro\n`;
    const seen = await inBrowser(JOURNEY, {
      email: uniqueEmail('console-user'),
      domain,
      csv,
      pro,
      otherId: randomUUID(),
      dns: infra.dns.controlUrl,
      shots: process.env.CONSOLE_SCREENSHOTS ?? '',
    });
    expect(seen.loginError).toContain('Invalid email or password');
    expect(seen.passwordError).toMatch(/8/);
    expect(seen.secretKey).toMatch(/^sk_/);
    expect(seen.publicKey).toMatch(/^pk_/);
    expect(seen.pendingBadge).toBe('pending');
    expect(seen.verifiedBadge).toBe('verified');
    expect(seen.liquidError).toMatch(/line:2/);
    expect(seen.previewSubject).toBe('Hello Ann');
    expect(seen.previewBody).toBe('Hi Ann, your plan is free.');
    expect(seen.imported).toBe('3');
    expect(seen.importErrors).toContain('invalid_email');
    expect(seen.contactsTable).toContain(pro[1]);
    expect(seen.segmentCount).toBe('2');
    expect(seen.campaignRecipients).toBe('2');
    expect(seen.campaignSent).toBe('2');
    expect(seen.campaignSeries.sent).toBe(2);
    expect(seen.otherCampaign).toBe(0);
    expect(seen.badCampaign).toBe('BAD_REQUEST');
    expect(seen.enableError).toContain('has no next step');
    expect(seen.invalidMarked).toBe(1);
    expect(seen.history).toContain('UPDATE_CONTACT');
    expect(seen.activity).toContain('email.sent');
    expect(seen.usedEmails).toBe('2');
    expect(seen.capSaved).toBe('Caps saved.');
    expect(seen.noProvider).toBe(1);
    expect(seen.capError).toMatch(/at least 0/);
    expect(seen.loggedOut).toBe(true);
    // The campaign's mail reached both pro contacts, personalised; the free one got none.
    for (const [i, to] of pro.entries()) {
      const [mail] = await waitForMail(to);
      expect(mail.parsed.subject).toBe(`News for ${['Ann', 'Bo'][i]}`);
    }
    expect(await receivedMail(free)).toEqual([]);
  }, 300_000);

  test('account pages: verify the email from its mail, reset a forgotten password, log in again', async () => {
    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const owner = await newTenant();
    const seen = await inBrowser(ACCOUNT, {
      email: uniqueEmail('console-account'),
      smtp: infra.smtp.controlUrl,
      owner,
    });
    expect(seen.verified).toBe('Your email address is verified.');
    expect(seen.noticeAfter).toBe(0);
    // The full keys shown after creation stay in the tab until logging out, not after.
    expect(seen.keysBeforeLogout).toBe(1);
    expect(seen.keysAfterLogout).toBe(0);
    expect(seen.requested).toContain('a reset link is on its way');
    expect(seen.changed).toContain('Your password is changed');
    expect(seen.reused).toMatch(/invalid|expired|used/i);
    expect(seen.projectAfterLogin).toBe('Mine');
    expect(seen.projectsAfterAccept.sort()).toEqual(['Mine', 'Test project']);
  }, 120_000);
});
