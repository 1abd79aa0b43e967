import { type ChildProcess, execFile } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import pg from 'pg';
import { call, eventually, expectEnvelope, sessionCookie, uniqueEmail } from './support/client.js';
import { freePort, httpOk, ROOT, startPlatform, stopProcess, waitFor } from './support/processes.js';

const execFileAsync = promisify(execFile);

// Embedded mode with the local SMTP sink (no SMTP_URL): every project sends from the sandbox sender
// without DNS, and GET /dev/mail shows what the sink received (HTML for a browser, JSON by Accept or at
// /dev/mail.json), kept in messaging's database and readable after a restart with the same session cookie.

const SANDBOX = 'sandbox@sandbox.localhost';
const CHROMIUM = '/usr/bin/chromium';
const PERSON_UA_FLAG =
  '--user-agent=Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

/**
 * A browser check run with `node --input-type=module`: its options in BROWSER_CHECK (`c`), `body` drives `page`
 * (`nav` follows the console's main navigation) and fills `seen`, printed as JSON at the end. The browser sends a
 * person's Chrome user agent (a launch flag: a page's override misses the mail's sandboxed frame): headless
 * Chromium's own says `HeadlessChrome`, and its opens and clicks would be taken for a link scanner's and not
 * recorded (README "Tracking", automated hits).
 */
const browserScript = (body: string) => `
import { chromium } from 'playwright-core';
const c = JSON.parse(process.env.BROWSER_CHECK);
const browser = await chromium.launch({ executablePath: c.chromium, args: [${JSON.stringify(PERSON_UA_FLAG)}] });
const seen = {};
try {
  const page = await browser.newPage();
  const nav = (name) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
${body}} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(seen));
`;

/** What a person does in the browser: sign in on the form, open the inbox, open the message, click the link. */
const BROWSER_SCRIPT = browserScript(`
  await page.goto(c.base + '/dev/mail');
  seen.signInForm = await page.locator('form[action="/dev/mail/sign-in"]').count();
  await page.fill('input[name=email]', c.email);
  await page.fill('input[name=password]', c.password);
  await page.click('button[type=submit]');
  await page.waitForURL(c.base + '/dev/mail');
  seen.inboxUrl = page.url();
  await page.getByRole('link', { name: c.subject }).click();
  await page.waitForURL(c.base + '/dev/mail/' + c.id);
  seen.messageUrl = page.url();
  seen.h1 = await page.locator('h1').textContent();
  const link = page.frameLocator('iframe[title="HTML part"]').getByRole('link', { name: c.linkText });
  seen.href = await link.getAttribute('href');
  seen.main = await page.locator('main').textContent();
  // It opens in a new tab: the frame is sandboxed and its links carry target=_blank.
  const [tab] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
  // The tracked link answers a redirect to example.com (which may be unreachable here): the click is recorded.
  await tab.waitForLoadState('domcontentloaded').catch(() => undefined);
  seen.clicked = true;
`);

/** The console in embedded mode: a campaign from the sandbox sender, read in the mail viewer the console links. */
const CONSOLE_SCRIPT = browserScript(`
  await page.goto(c.base + '/app/signup');
  await page.getByLabel('Email').fill(c.email);
  await page.getByLabel('Password').fill('a-long-password-1');
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByLabel('Project name').fill('Embedded shop');
  await page.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL(c.base + '/app/settings');
  await nav('Contacts');
  await page.getByLabel('Add a contact').fill(c.to);
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await page.getByRole('link', { name: c.to }).waitFor();
  await nav('Campaigns');
  await page.getByRole('link', { name: 'New campaign' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Hello embedded');
  await page.getByLabel('Subject').fill(c.subject);
  await page.getByLabel('From (email)').fill('news@sandbox.localhost');
  await page.getByRole('button', { name: 'Create campaign' }).click();
  await page.waitForURL(/\\/app\\/campaigns\\/[0-9a-f-]{36}$/);
  await page.getByRole('button', { name: 'Send now' }).click();
  for (const end = Date.now() + 30000; Date.now() < end; await page.waitForTimeout(250)) {
    if ((await page.getByTestId('stat-sent').textContent().catch(() => '')) === '1') break;
  }
  seen.sent = await page.getByTestId('stat-sent').textContent();
  await nav('Mail viewer');
  await page.waitForURL(c.base + '/dev/mail');
  await page.getByRole('link', { name: c.subject }).click();
  seen.h1 = await page.locator('h1').textContent();
`);

/** A newcomer in the console of an embedded platform: where to start, what the sandbox is, a template's test send. */
const NEWCOMER_SCRIPT = browserScript(`
  // The page at the URL the start-up banner prints links the console.
  await page.goto(c.base + '/');
  await page.getByRole('link', { name: '/app' }).click();
  await page.getByRole('link', { name: 'Create an account' }).click();
  await page.getByLabel('Email').fill(c.email);
  await page.getByLabel('Password').fill('a-long-password-1');
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByLabel('Project name').fill('Newcomer');
  await page.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL(c.base + '/app/settings');
  const secretKey = (await page.getByTestId('Secret key').textContent()).trim();
  await nav('Overview');
  await page.locator('.notice').waitFor();
  seen.notice = await page.locator('.notice').textContent();
  seen.noticeLinks = await page.locator('.notice a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  seen.steps = await page.locator('ol.steps').textContent();
  await nav('Domains');
  seen.sandboxNotice = await page.getByTestId('sandbox-notice').textContent();
  // A template from the sandbox sender (MARKETING by default), tested on a new address: withheld, and why.
  await nav('Templates');
  await page.getByRole('link', { name: 'New template' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Welcome');
  await page.getByLabel('Subject', { exact: true }).fill('Welcome aboard');
  await page.getByLabel('From (email)').fill('sandbox@sandbox.localhost');
  await page.getByRole('button', { name: 'Create template' }).click();
  await page.waitForURL(/\\/app\\/templates\\/[0-9a-f-]{36}$/);
  const templateId = page.url().split('/').pop();
  await page.getByLabel('Send a test to').fill(c.to);
  await page.getByRole('button', { name: 'Send test' }).click();
  seen.testStatus = await page.getByRole('status').filter({ hasText: c.to }).textContent();
  // A workflow step that sends the template shows up under the template.
  const api = (method, path, body) =>
    fetch(c.base + path, {
      method,
      headers: { authorization: 'Bearer ' + secretKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json());
  const wf = await api('POST', '/workflows', { name: 'Onboarding', eventName: 'signed-up' });
  await api('POST', '/workflows/' + wf.id + '/steps', { type: 'SEND_EMAIL', name: 'Welcome', config: { templateId } });
  await page.reload();
  seen.usage = await page.getByTestId('template-usage').textContent();
  // The activity feed says why the test was withheld.
  await nav('Activity');
  seen.activity = await page.getByRole('row').filter({ hasText: c.to }).first().textContent();
`);

interface Listed {
  id: string;
  emailId: string;
  projectId: string;
  from: string;
  to: string[];
  subject: string;
  text: string;
  attachments: number;
  url: string;
}

const cookieOf = (res: { headers: Headers }) => sessionCookie(res.headers);

describe('embedded mode with the local sink: the sandbox sender and the mail viewer', () => {
  let child: ChildProcess;
  let dataDir: string;
  let baseUrl: string;
  let publicUrl: string;
  const env: Record<string, string> = {};

  const start = async () => {
    child = startPlatform([], env, 'embedded-dev-mail');
    await waitFor('embedded platform', () => httpOk(`${baseUrl}/healthz`), child, 120_000);
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-dev-mail-'));
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    Object.assign(env, {
      DATABASE_URL: '',
      NATS_URL: '',
      REDIS_URL: '',
      SMTP_URL: '',
      SERVICE_TOKEN: '',
      // Unset: embedded mode keeps a generated one in DATA_DIR.
      SESSION_SECRET: '',
      BIND_HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      PORT: String(port),
      EMBEDDED_PG_PORT: String(await freePort()),
      EMBEDDED_SMTP_PORT: String(await freePort()),
      PUBLIC_URL: publicUrl,
    });
    for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS'])
      env[`${s}_PORT`] = String(await freePort());
    baseUrl = publicUrl;
    await start();
  }, 180_000);

  afterAll(async () => {
    if (child) await stopProcess(child);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A new user with one project: the session cookie, the secret key and the sign-in. */
  async function owner(tag: string) {
    const email = uniqueEmail(tag);
    const signup = await call('POST', '/auth/signup', { email, password: 'password-123' }, { baseUrl });
    expect(signup.status).toBe(201);
    const cookie = cookieOf(signup);
    const project = await call('POST', '/users/@me/projects', { name: tag }, { baseUrl, cookie });
    return { email, cookie, key: project.body.secretKey as string, projectId: project.body.id as string };
  }

  const listed = async (cookie: string) =>
    (await call<{ enabled: boolean; data: Listed[] }>('GET', '/dev/mail.json', undefined, { baseUrl, cookie })).body;

  async function mailTo(cookie: string, to: string): Promise<Listed> {
    return eventually(
      async () => (await listed(cookie)).data.find((m) => m.to.includes(to)),
      20_000,
      `mail to ${to} in the viewer`,
    );
  }

  let ann: Awaited<ReturnType<typeof owner>>;
  let annMail: Listed;
  const annTo = uniqueEmail('ann-friend');
  const attachment = Buffer.from('name,plan\nAnn,pro\n');

  test('a new project sends from the sandbox sender at once; the mail is DKIM-signed and in the viewer', async () => {
    ann = await owner('ann');
    const sent = await call(
      'POST',
      '/v1/send',
      {
        to: annTo,
        from: { email: SANDBOX, name: 'Sandbox' },
        subject: 'Welcome aboard',
        body:
          '<p>Hello! <a href="https://example.com/welcome">Open the welcome page</a></p>' +
          '<p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
        attachments: [{ filename: 'plan.csv', content: attachment.toString('base64'), contentType: 'text/csv' }],
      },
      { baseUrl, key: ann.key },
    );
    expect(sent.status).toBe(200);
    const emailId = sent.body.data.emails[0].email;

    annMail = await mailTo(ann.cookie, annTo);
    expect(annMail).toMatchObject({
      emailId,
      projectId: ann.projectId,
      to: [annTo],
      subject: 'Welcome aboard',
      attachments: 1,
      url: `/dev/mail/${annMail.id}`,
    });
    expect(annMail.from).toContain(SANDBOX);
    expect(annMail.text).toContain('Open the welcome page');

    // The message, as JSON by Accept and at <id>.json.
    const byAccept = await call('GET', `/dev/mail/${annMail.id}`, undefined, {
      baseUrl,
      cookie: ann.cookie,
      headers: { accept: 'application/json' },
    });
    expect(byAccept.status).toBe(200);
    const m = byAccept.body;
    expect(
      (await call('GET', `/dev/mail/${annMail.id}.json`, undefined, { baseUrl, cookie: ann.cookie })).body,
    ).toEqual(m);
    const header = (name: string) => m.headers.find((h: { name: string }) => h.name.toLowerCase() === name)?.value;
    expect(header('dkim-signature')).toMatch(/d=sandbox\.localhost;/);
    expect(header('dkim-signature')).toMatch(/s=sandbox;/);
    expect(header('list-unsubscribe')).toContain(`${publicUrl}/unsubscribe/`);
    expect(header('x-email-id')).toBe(emailId);
    expect(m.html).toContain(`${publicUrl}/t/c/`);
    expect(m.raw).toContain('DKIM-Signature:');
    expect(m.attachments).toEqual([
      expect.objectContaining({ filename: 'plan.csv', contentType: 'text/csv', size: attachment.length }),
    ]);

    // The attachment and the raw source download.
    const file = await fetch(`${baseUrl}${m.attachments[0].url}`, { headers: { cookie: ann.cookie } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-disposition')).toContain('attachment');
    expect(Buffer.from(await file.arrayBuffer())).toEqual(attachment);
    const raw = await fetch(`${baseUrl}${m.rawUrl}`, { headers: { cookie: ann.cookie } });
    expect(raw.headers.get('content-type')).toContain('message/rfc822');
    const rawBytes = Buffer.from(await raw.arrayBuffer());
    expect(rawBytes.toString('utf8')).toBe(m.raw);

    // The signature verifies with the sandbox key messaging keeps in its settings.
    const db = new pg.Client({
      connectionString: `postgres://postgres:postgres@127.0.0.1:${env.EMBEDDED_PG_PORT}/platform_messaging`,
    });
    await db.connect();
    const { rows } = await db.query("SELECT value FROM settings WHERE key = 'sandbox_dkim_private_key'");
    await db.end();
    const publicKey = createPublicKey(rows[0].value).export({ type: 'spki', format: 'der' }).toString('base64');
    const dkim = await dkimVerify(rawBytes, {
      resolver: async (name: string) => {
        if (name !== 'sandbox._domainkey.sandbox.localhost')
          throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
        return [[`v=DKIM1; k=rsa; p=${publicKey}`]] as never;
      },
    });
    expect(dkim.results[0]).toMatchObject({ signingDomain: 'sandbox.localhost', status: { result: 'pass' } });
  });

  test("each user sees only their own projects' mail; signed out: a JSON 401, or the sign-in page", async () => {
    const bob = await owner('bob');
    const bobTo = uniqueEmail('bob-friend');
    const sent = await call(
      'POST',
      '/v1/send',
      { to: bobTo, from: 'news@sandbox.localhost', subject: 'For Bob only', body: '<p>Bob</p>' },
      { baseUrl, key: bob.key },
    );
    expect(sent.status).toBe(200);
    const bobMail = await mailTo(bob.cookie, bobTo);
    expect((await listed(bob.cookie)).data.map((m) => m.to)).toEqual([[bobTo]]);
    expect((await listed(ann.cookie)).data.map((m) => m.to)).toEqual([[annTo]]);
    expectEnvelope(
      await call('GET', `/dev/mail/${bobMail.id}`, undefined, { baseUrl, cookie: ann.cookie }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expect((await fetch(`${baseUrl}/dev/mail/${bobMail.id}/raw`, { headers: { cookie: ann.cookie } })).status).toBe(
      404,
    );

    expectEnvelope(await call('GET', '/dev/mail', undefined, { baseUrl }), 401, 'UNAUTHORIZED');
    expectEnvelope(await call('GET', '/dev/mail.json', undefined, { baseUrl }), 401, 'UNAUTHORIZED');
    const page = await fetch(`${baseUrl}/dev/mail`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(401);
    expect(await page.text()).toContain('action="/dev/mail/sign-in"');
    expect(page.headers.get('content-security-policy')).toContain("base-uri 'none'; form-action 'self'");

    const wrong = await fetch(`${baseUrl}/dev/mail/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: ann.email, password: 'wrong-password' }),
      redirect: 'manual',
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('Wrong email or password');
  });

  test("another site's form cannot sign a browser in to the mail viewer (login CSRF)", async () => {
    const carol = await owner('carol');
    const signIn = (headers: Record<string, string>) =>
      fetch(`${baseUrl}/dev/mail/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ email: carol.email, password: 'password-123' }),
        redirect: 'manual',
      });
    // An attacker's page posting its own account's credentials would leave the visitor signed in as the attacker.
    const forged = await signIn({ origin: 'http://evil.example' });
    expect(forged.status).toBe(403);
    expect(forged.headers.getSetCookie()).toEqual([]);
    // The viewer's own form (same origin) and a client without Origin sign in.
    expect((await signIn({ origin: publicUrl })).status).toBe(303);
    expect((await signIn({})).status).toBe(303);
  });

  test('account mail is in the viewer of the account it went to (only): an embedded account can verify', async () => {
    const dee = await owner('dee');
    const eve = await owner('eve');
    expect((await call('POST', '/auth/request-verification', undefined, { baseUrl, cookie: dee.cookie })).status).toBe(
      200,
    );
    const mail = await mailTo(dee.cookie, dee.email);
    expect(mail).toMatchObject({ projectId: null, emailId: null, to: [dee.email] });
    const body = await call('GET', `/dev/mail/${mail.id}.json`, undefined, { baseUrl, cookie: dee.cookie });
    const token = /\/app\/verify\?token=([A-Za-z0-9_-]+)/.exec(body.body.text)?.[1];
    expect(token).toBeDefined();
    // Nobody else sees it, in the list or by id.
    expect((await listed(eve.cookie)).data.map((m) => m.id)).not.toContain(mail.id);
    expectEnvelope(
      await call('GET', `/dev/mail/${mail.id}.json`, undefined, { baseUrl, cookie: eve.cookie }),
      404,
      'RESOURCE_NOT_FOUND',
    );
    // The link verifies the address, which accepting an invitation needs.
    const verified = await call('POST', '/auth/verify-email', { token }, { baseUrl });
    expect(verified.status).toBe(200);
    expect(verified.body.emailVerified).toBe(true);
  });

  test('an attachment with a non-Latin name downloads under that name (RFC 6266 filename*)', async () => {
    const cy = await owner('cy');
    const to = uniqueEmail('cy-friend');
    const filename = 'отчёт 😀 "q4".pdf';
    const content = Buffer.from('%PDF-1.4 report');
    const sent = await call(
      'POST',
      '/v1/send',
      {
        to,
        from: SANDBOX,
        subject: 'Report',
        body: '<p>Report</p>',
        attachments: [{ filename, content: content.toString('base64'), contentType: 'application/pdf' }],
      },
      { baseUrl, key: cy.key },
    );
    expect(sent.status).toBe(200);
    const listedMail = await mailTo(cy.cookie, to);
    const m = (await call('GET', `/dev/mail/${listedMail.id}.json`, undefined, { baseUrl, cookie: cy.cookie })).body;
    expect(m.attachments[0].filename).toBe(filename);
    const file = await fetch(`${baseUrl}${m.attachments[0].url}`, { headers: { cookie: cy.cookie } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toContain('application/pdf');
    const disposition = file.headers.get('content-disposition') ?? '';
    expect(disposition).toMatch(/^attachment; /);
    expect(decodeURIComponent(/filename\*=UTF-8''([^;]+)/.exec(disposition)?.[1] ?? '')).toBe(filename);
    expect(Buffer.from(await file.arrayBuffer())).toEqual(content);
  });

  test('a real browser: sign in, open the inbox and the message, see the subject and the tracked link', async () => {
    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    // Playwright runs in its own Node process: inside Jest's VM modules its disposables fail ("Object not disposable").
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', BROWSER_SCRIPT], {
      cwd: ROOT,
      timeout: 90_000,
      env: {
        ...process.env,
        BROWSER_CHECK: JSON.stringify({
          chromium: CHROMIUM,
          base: baseUrl,
          email: ann.email,
          password: 'password-123',
          id: annMail.id,
          subject: 'Welcome aboard',
          linkText: 'Open the welcome page',
        }),
      },
    });
    const seen = JSON.parse(stdout);
    // Not signed in, the page was the sign-in form; signed in, the inbox listed the message and opened it.
    expect(seen.signInForm).toBe(1);
    expect(seen.inboxUrl).toBe(`${baseUrl}/dev/mail`);
    expect(seen.messageUrl).toBe(`${baseUrl}/dev/mail/${annMail.id}`);
    expect(seen.h1).toBe('Welcome aboard');
    expect(seen.href).toMatch(new RegExp(`^${publicUrl}/t/c/`));
    expect(seen.main).toContain('DKIM-Signature');
    expect(seen.main).toContain('List-Unsubscribe');
    expect(seen.main).toContain('plan.csv');
    expect(seen.clicked).toBe(true);
    // The open pixel loaded in the frame and the click through the tracked link land in /activity.
    const activity = await eventually(
      async () => {
        const res = await call('GET', '/activity', undefined, { baseUrl, key: ann.key });
        const types: string[] = res.body.data.map((a: { type: string }) => a.type);
        return types.includes('email.open') && types.includes('email.click') ? types : undefined;
      },
      15_000,
      'email.open and email.click in /activity',
    );
    expect(activity).toEqual(expect.arrayContaining(['email.sent', 'email.open', 'email.click']));
  });

  test('after a restart the mail is still there and the same session cookie still works', async () => {
    const secretFile = path.join(dataDir, 'session-secret');
    expect(existsSync(secretFile)).toBe(true);
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    await stopProcess(child);
    await start();
    const after = await listed(ann.cookie);
    expect(after.data.map((m) => m.id)).toEqual([annMail.id]);
    const page = await fetch(`${baseUrl}/dev/mail`, { headers: { accept: 'text/html', cookie: ann.cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Welcome aboard');
  }, 180_000);
  test('the console guides a newcomer: sandbox sender, where account mail goes, why a test was withheld', async () => {
    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const to = uniqueEmail('first-test');
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', NEWCOMER_SCRIPT], {
      cwd: ROOT,
      timeout: 120_000,
      env: {
        ...process.env,
        BROWSER_CHECK: JSON.stringify({ chromium: CHROMIUM, base: baseUrl, email: uniqueEmail('newcomer'), to }),
      },
    });
    const seen = JSON.parse(stdout);
    expect(seen.notice).toContain('not verified');
    expect(seen.noticeLinks).toEqual(['/dev/mail']);
    expect(seen.steps).toContain('sandbox@sandbox.localhost');
    expect(seen.sandboxNotice).toContain('sandbox@sandbox.localhost');
    expect(seen.testStatus).toContain(`Not sent to ${to}: suppressed (unsubscribed)`);
    expect(seen.usage).toBe('Used by 0 campaigns and 1 workflow steps.');
    expect(seen.activity).toContain('email.suppressed');
    expect(seen.activity).toContain('Welcome aboard: unsubscribed');
  }, 150_000);

  test('the console in embedded mode: a sandbox campaign, opened in the linked mail viewer', async () => {
    if (!existsSync(CHROMIUM)) {
      console.warn(`skipped: ${CHROMIUM} is missing (apt-get install chromium)`);
      return;
    }
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', CONSOLE_SCRIPT], {
      cwd: ROOT,
      timeout: 120_000,
      env: {
        ...process.env,
        BROWSER_CHECK: JSON.stringify({
          chromium: CHROMIUM,
          base: baseUrl,
          email: uniqueEmail('console-embedded'),
          to: uniqueEmail('reader'),
          subject: 'Greetings from the console',
        }),
      },
    });
    const seen = JSON.parse(stdout);
    expect(seen.sent).toBe('1');
    expect(seen.h1).toBe('Greetings from the console');
  }, 150_000);
});
