import { Resolver } from 'node:dns/promises';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { call, eventually, expectEnvelope, newTenant, uniqueEmail, type Tenant } from './support/client.js';
import {
  dnsServers,
  receivedMail,
  smtpAttempts,
  uniqueDomain,
  verifiedDomain,
  waitForMail,
} from './support/messaging.js';

let t: Tenant;
let domain: string;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
});

const send = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  call('POST', '/v1/send', body, { key: opts.key ?? t.secretKey, headers: opts.headers });

/** A recipient address on a domain the sink accepts; `tag` prefixes (bounce-, tempfail-) steer the sink. */
const recipient = (tag = 'to') => uniqueEmail(tag);

function hrefs(html: string): string[] {
  return [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1].replace(/&amp;/g, '&'));
}

describe('POST /v1/send', () => {
  test('inline send: To, named From, Reply-To, subject, rendered HTML, text part, custom headers arrive', async () => {
    const to = recipient();
    const res = await send({
      to: { name: 'Ann Lee', email: to },
      from: { name: 'Acme News', email: `news@${domain}` },
      reply: `support@${domain}`,
      subject: 'Hello {{firstName}}',
      body:
        '<h1>Hi {{firstName}}</h1><p>Your code is {{code}}. ' +
        '<a href="https://example.com/docs?a=1&amp;b=2">Docs</a></p>',
      data: { firstName: 'Ann', code: { value: 'X-42', persistent: false } },
      headers: { 'X-Campaign-Tag': 'spring' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      data: { emails: [{ contact: { email: to }, email: expect.stringMatching(/^[0-9a-f-]{36}$/) }] },
    });
    expect(new Date(res.body.data.timestamp).toString()).not.toBe('Invalid Date');

    const [mail] = await waitForMail(to);
    const m = mail.parsed;
    expect(m.to && !Array.isArray(m.to) && m.to.value[0]).toMatchObject({ address: to, name: 'Ann Lee' });
    expect(m.from!.value[0]).toMatchObject({ address: `news@${domain}`, name: 'Acme News' });
    expect(m.replyTo!.value[0].address).toBe(`support@${domain}`);
    expect(m.subject).toBe('Hello Ann');
    expect(m.html).toContain('<h1>Hi Ann</h1>');
    expect(m.html).toContain('Your code is X-42.');
    // Headings come out upper-cased; the text part keeps the real link, entity decoded.
    expect(m.text?.trim()).toBe('HI ANN\n\nYour code is X-42. Docs [https://example.com/docs?a=1&b=2]');
    expect(m.headers.get('x-campaign-tag')).toBe('spring');
    expect(m.messageId).toMatch(new RegExp(`^<${res.body.data.emails[0].email}@${domain.replace(/\./g, '\\.')}>$`));
    expect(m.headers.get('list-unsubscribe')).toBeUndefined(); // inline mail is transactional

    // The recipient became a contact, unsubscribed by default; one-off data was not stored.
    const contact = await call('GET', `/contacts/${res.body.data.emails[0].contact.id}`, undefined, {
      key: t.secretKey,
    });
    expect(contact.body).toMatchObject({ email: to, subscribed: false, data: { firstName: 'Ann' } });
    expect(contact.body.data.code).toBeUndefined();
  });

  test("a one-off value nested in an object renders beside that object's stored values, as in contacts", async () => {
    const to = recipient('nested');
    const res = await send({
      to,
      from: `news@${domain}`,
      subject: 's',
      body: '<p>[{{profile.tier}}-{{profile.code}}]</p>',
      data: { profile: { tier: 'gold', code: { value: 'X-1', persistent: false } } },
    });
    expect(res.status).toBe(200);
    expect((await waitForMail(to))[0].parsed.html).toContain('<p>[gold-X-1]</p>');
    const contact = await call('GET', `/contacts/${res.body.data.emails[0].contact.id}`, undefined, {
      key: t.secretKey,
    });
    expect(contact.body.data).toEqual({ profile: { tier: 'gold' } });
  });

  test('template send: overrides apply; MARKETING has one-click List-Unsubscribe; DKIM verifies', async () => {
    const template = await call(
      'POST',
      '/templates',
      {
        name: 'Promo',
        subject: 'Template subject {{plan ?? "free"}}',
        body: '<p>Dear {{ first name ?? "friend" }}, plan {{plan}}.</p><a href="{{unsubscribeUrl}}">unsubscribe</a>',
        from: `promo@${domain}`,
        fromName: 'Promo Team',
        replyTo: `promo-replies@${domain}`,
      },
      { key: t.secretKey },
    );
    expect(template.status).toBe(201);

    const to = recipient();
    const res = await send({
      to,
      template: template.body.id,
      subscribed: true,
      data: { plan: 'pro', 'first name': 'Bo' },
      subject: 'Overridden {{plan}}',
    });
    expect(res.status).toBe(200);
    const [mail] = await waitForMail(to);
    const m = mail.parsed;
    expect(m.subject).toBe('Overridden pro');
    expect(m.from!.value[0]).toMatchObject({ address: `promo@${domain}`, name: 'Promo Team' });
    expect(m.replyTo!.value[0].address).toBe(`promo-replies@${domain}`);
    expect(m.html).toContain('Dear Bo, plan pro.');
    const header = (name: string) => m.headerLines.find((h) => h.key === name)?.line.replace(/\r?\n\s+/g, ' ');
    expect(header('list-unsubscribe')).toMatch(
      /^List-Unsubscribe: <http[^>]+\/unsubscribe\/[^>]+>, <mailto:unsubscribe@/,
    );
    expect(header('list-unsubscribe-post')).toBe('List-Unsubscribe-Post: List-Unsubscribe=One-Click');
    const unsubscribeUrl = /<(https?:\/\/[^>]+\/unsubscribe\/[^>]+)>/.exec(header('list-unsubscribe')!)![1];
    // The unsubscribe link in the body is the platform's, not a click redirect.
    expect(hrefs(String(m.html))).toContain(unsubscribeUrl);

    const resolver = new Resolver();
    resolver.setServers([dnsServers()]);
    const dkim = await dkimVerify(mail.raw, {
      resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') as Promise<never>,
    });
    expect(dkim.results).toHaveLength(1);
    expect(dkim.results[0]).toMatchObject({ signingDomain: domain, status: { result: 'pass' } });
  });

  test('each recipient of an array gets its own contact and rendering, in order', async () => {
    const a = recipient('a');
    const b = recipient('b');
    const res = await send({
      to: [a, { name: 'Bee', email: b }],
      from: `hi@${domain}`,
      subject: 'For {{email}}',
      body: '<p>id {{id}}</p>',
    });
    expect(res.body.data.emails.map((e: { contact: { email: string } }) => e.contact.email)).toEqual([a, b]);
    const [ma] = await waitForMail(a);
    const [mb] = await waitForMail(b);
    expect(ma.parsed.subject).toBe(`For ${a}`);
    expect(mb.parsed.subject).toBe(`For ${b}`);
    expect(mb.parsed.html).toContain(`id ${res.body.data.emails[1].contact.id}`);
  });

  test('open and click tracking move the counters once per window and redirect to the signed URL', async () => {
    const tenant = await newTenant();
    const d = (await verifiedDomain(tenant)).domain;
    const to = recipient();
    const res = await send(
      { to, from: `hi@${d}`, subject: 's', body: '<p><a href="https://example.org/landing">go</a></p>' },
      { key: tenant.secretKey },
    );
    const emailId = res.body.data.emails[0].email;
    const [mail] = await waitForMail(to);
    const html = String(mail.parsed.html);
    const pixel = /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1];
    const click = hrefs(html).find((h) => h.includes('/t/c/'))!;
    expect(click).toBeDefined();

    const opened = await fetch(pixel);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('content-type')).toMatch(/image\/gif/);
    // A replay within TRACKING_OPEN_WINDOW_SECONDS / TRACKING_CLICK_WINDOW_SECONDS is answered alike, not recorded.
    const again = await fetch(pixel);
    expect(again.status).toBe(200);
    expect(again.headers.get('content-type')).toMatch(/image\/gif/);
    for (let i = 0; i < 2; i++) {
      const redirected = await fetch(click, { redirect: 'manual' });
      expect(redirected.status).toBe(302);
      expect(redirected.headers.get('location')).toBe('https://example.org/landing');
    }
    // The email's counters move in the transaction of the answer.
    const counted = await call('GET', `/emails/${emailId}`, undefined, { key: tenant.secretKey });
    expect(counted.body).toMatchObject({ opens: 1, clicks: 1 });

    const stats = await eventually(async () => {
      const s = await call('GET', '/activity/stats', undefined, { key: tenant.secretKey });
      return s.body.byType?.['email.click'] === 1 && s.body.byType?.['email.open'] === 1 ? s.body : undefined;
    });
    expect(stats.emails).toMatchObject({ sent: 1, opened: 1, clicked: 1, opens: 1, clicks: 1 });
    const opens = await call('GET', '/activity?type=email.open', undefined, { key: tenant.secretKey });
    expect(opens.body.data.map((a: { data: { isFirstOpen: boolean } }) => a.data.isFirstOpen)).toEqual([true]);
    expect(opens.body.data[0]).toMatchObject({ emailId, email: to });
    const clicks = await call('GET', '/activity?type=email.click', undefined, { key: tenant.secretKey });
    expect(clicks.body.data[0].data).toMatchObject({ url: 'https://example.org/landing', isFirstClick: true });

    // Tampered tokens are refused; the redirect cannot be pointed elsewhere.
    const evil = Buffer.from(JSON.stringify({ emailId, url: 'https://evil.example' })).toString('base64url');
    const forged = click.replace(/\/t\/c\/[^.]+\./, `/t/c/${evil}.`); // new payload, original signature
    expect((await fetch(forged, { redirect: 'manual' })).status).toBe(404);
    // Flip the signature's first character: the last one of base64url may only carry padding bits.
    expect(
      (
        await fetch(
          pixel.replace(/(\/t\/o\/[^.]+\.)(.)/, (_m, head: string, c: string) => `${head}${c === 'A' ? 'B' : 'A'}`),
        )
      ).status,
    ).toBe(404);
  });

  test('one-click unsubscribe flips the contact; GET only confirms; no marketing mail once unsubscribed', async () => {
    const template = await call(
      'POST',
      '/templates',
      { name: 'M', subject: 'Marketing', body: '<p>offer</p>', from: `offers@${domain}` },
      { key: t.secretKey },
    );
    const to = recipient();
    const res = await send({ to, template: template.body.id, subscribed: true });
    const contactId = res.body.data.emails[0].contact.id;
    const [mail] = await waitForMail(to);
    const url = /<(https?:\/\/[^>]+\/unsubscribe\/[^>]+)>/.exec(mail.raw.toString('utf8').replace(/\r\n\s+/g, ' '))![1];

    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<form method="post"/);
    expect((await call('GET', `/contacts/${contactId}`, undefined, { key: t.secretKey })).body.subscribed).toBe(true);

    // RFC 8058: the mailbox provider POSTs List-Unsubscribe=One-Click.
    const oneClick = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status).toBe(200);
    expect((await call('GET', `/contacts/${contactId}`, undefined, { key: t.secretKey })).body.subscribed).toBe(false);

    // Marketing mail is withheld now; a transactional message sent after it still arrives, alone.
    await send({ to, template: template.body.id });
    await send({ to, from: `hi@${domain}`, subject: 'Receipt', body: '<p>receipt</p>' });
    const all = await waitForMail(to, 2);
    expect(all.map((x) => x.parsed.subject)).toEqual(['Marketing', 'Receipt']);
    expect((await fetch(url.replace('/unsubscribe/', '/unsubscribe/x'))).status).toBe(404);
  });

  test('a bounce notification on the webhook suppresses the next send; a wrong secret is 401', async () => {
    const tenant = await newTenant();
    const d = (await verifiedDomain(tenant)).domain;
    const to = recipient();
    const first = await send({ to, from: `hi@${d}`, subject: 'one', body: 'one' }, { key: tenant.secretKey });
    await waitForMail(to);
    const emailId = first.body.data.emails[0].email;
    const hook = (body: unknown, secret = platformSecret()) =>
      call('POST', '/webhooks/generic', body, { headers: { 'x-webhook-secret': secret } });
    expectEnvelope(await hook({ type: 'bounce', emailId }, 'wrong-secret-wrong-secret-00'), 401, 'UNAUTHORIZED');
    expectEnvelope(await hook({ type: 'explode', emailId }), 422, 'VALIDATION_ERROR');
    const ok = await hook({ type: 'bounce', emailId, reason: '550 mailbox gone' });
    expect(ok.body).toMatchObject({ processed: 1, ignored: 0 });
    expect((await hook({ type: 'bounce', emailId })).body).toMatchObject({ processed: 0, ignored: 1 }); // idempotent

    await send({ to, from: `hi@${d}`, subject: 'two', body: 'two' }, { key: tenant.secretKey });
    const stats = await call('GET', '/activity/stats', undefined, { key: tenant.secretKey });
    expect(stats.body.emails).toMatchObject({ bounced: 1, suppressed: 1 });
    await eventually(async () => {
      const s = await call('GET', '/activity?type=email.bounce', undefined, { key: tenant.secretKey });
      return s.body.data.length === 1 && s.body.data[0].data.reason === '550 mailbox gone' ? true : undefined;
    });
    // Delivery and complaint notifications by Message-ID.
    const to2 = recipient();
    const second = await send({ to: to2, from: `hi@${d}`, subject: 'x', body: 'x' }, { key: tenant.secretKey });
    const [mail] = await waitForMail(to2);
    expect(
      (
        await hook({
          events: [
            { type: 'delivery', messageId: mail.parsed.messageId },
            { type: 'complaint', messageId: mail.parsed.messageId },
          ],
        })
      ).body.processed,
    ).toBe(2);
    await eventually(async () => {
      const s = await call('GET', `/activity?contactId=${second.body.data.emails[0].contact.id}`, undefined, {
        key: tenant.secretKey,
      });
      const types = s.body.data.map((a: { type: string }) => a.type).sort();
      return types.join() === 'email.complaint,email.delivery,email.sent' ? true : undefined;
    });
  });

  test('a 5xx SMTP answer is a permanent failure recorded as email.bounce; a 4xx answer is retried', async () => {
    const tenant = await newTenant();
    const d = (await verifiedDomain(tenant)).domain;
    const bouncing = recipient('bounce-x');
    const greylisted = recipient('tempfail-x');
    const res = await send(
      { to: [bouncing, greylisted], from: `hi@${d}`, subject: 's', body: 'b' },
      { key: tenant.secretKey },
    );
    expect(res.status).toBe(200);

    await waitForMail(greylisted);
    expect(await smtpAttempts(greylisted)).toBe(2);
    const bounce = await eventually(async () => {
      const s = await call('GET', '/activity?type=email.bounce', undefined, { key: tenant.secretKey });
      return s.body.data[0];
    });
    expect(bounce).toMatchObject({ email: bouncing, emailId: res.body.data.emails[0].email });
    expect(bounce.data.reason).toMatch(/Mailbox does not exist/);
    expect(await receivedMail(bouncing)).toEqual([]);
    // The bounced address is suppressed: the next send does not even try.
    await send({ to: bouncing, from: `hi@${d}`, subject: 's', body: 'b' }, { key: tenant.secretKey });
    expect((await call('GET', '/activity/stats', undefined, { key: tenant.secretKey })).body.emails).toMatchObject({
      bounced: 1,
      suppressed: 1,
    });
    const attempts = await smtpAttempts(bouncing);
    expect(attempts).toBe(1);
    // contacts recorded the lifecycle as email.* events on the contact.
    await eventually(async () => {
      const ev = await call('GET', `/events/contact/${res.body.data.emails[0].contact.id}`, undefined, {
        key: tenant.secretKey,
      });
      const names = (ev.body.data ?? ev.body ?? []).map((e: { name: string }) => e.name);
      return names.includes('email.bounce') ? true : undefined;
    });
  });

  test('attachments arrive as MIME parts', async () => {
    const to = recipient();
    const content = Buffer.from('hello attachment').toString('base64');
    const res = await send({
      to,
      from: `hi@${domain}`,
      subject: 'files',
      body: '<p>see attached</p>',
      attachments: [{ filename: 'note.txt', content, contentType: 'text/plain' }],
    });
    expect(res.status).toBe(200);
    const [mail] = await waitForMail(to);
    expect(mail.parsed.attachments).toHaveLength(1);
    expect(mail.parsed.attachments[0]).toMatchObject({ filename: 'note.txt', contentType: 'text/plain' });
    expect(mail.parsed.attachments[0].content.toString()).toBe('hello attachment');
  });
});

function platformSecret(): string {
  return 'test-webhook-secret-0123456789';
}

describe('POST /v1/send validation', () => {
  const from = () => `hi@${domain}`;
  const fieldsOf = (res: { body: { error: { errors: { field: string }[] } } }) =>
    res.body.error.errors.map((e) => e.field).sort();

  test('a public key is 401 INVALID_API_KEY', async () => {
    expectEnvelope(
      await send({ to: recipient(), from: from(), subject: 's', body: 'b' }, { key: t.publicKey }),
      401,
      'INVALID_API_KEY',
    );
  });

  test.each([
    ['to missing', { subject: 's', body: 'b' }, ['to']],
    ['to invalid', { to: 'not-an-email', subject: 's', body: 'b' }, ['to']],
    ['to empty array', { to: [], subject: 's', body: 'b' }, ['to']],
    ['to item invalid', { to: ['ok@example.com', { email: 'bad' }], subject: 's', body: 'b' }, ['to.1.email']],
    ['no content', { to: 'a@example.com' }, ['body', 'subject']],
    ['subject too long', { to: 'a@example.com', subject: 'x'.repeat(999), body: 'b' }, ['subject']],
    ['subject empty', { to: 'a@example.com', subject: '', body: 'b' }, ['subject']],
    ['subject with a newline', { to: 'a@example.com', subject: 'a\nb', body: 'b' }, ['subject']],
    ['body empty', { to: 'a@example.com', subject: 's', body: '' }, ['body']],
    ['template not a uuid', { to: 'a@example.com', template: 'welcome' }, ['template']],
    ['from invalid', { to: 'a@example.com', subject: 's', body: 'b', from: 'nope' }, ['from']],
    ['reply invalid', { to: 'a@example.com', subject: 's', body: 'b', reply: 'nope' }, ['reply']],
    ['subscribed not boolean', { to: 'a@example.com', subject: 's', body: 'b', subscribed: 'yes' }, ['subscribed']],
    ['data not an object', { to: 'a@example.com', subject: 's', body: 'b', data: [1] }, ['data']],
    [
      'header value too long',
      { to: 'a@example.com', subject: 's', body: 'b', headers: { 'X-Long': 'x'.repeat(999) } },
      ['headers.X-Long'],
    ],
    [
      'header value not a string',
      { to: 'a@example.com', subject: 's', body: 'b', headers: { 'X-N': 1 } },
      ['headers.X-N'],
    ],
    [
      'too many attachments',
      {
        to: 'a@example.com',
        subject: 's',
        body: 'b',
        attachments: Array.from({ length: 11 }, (_, i) => ({
          filename: `f${i}.txt`,
          content: 'aGk=',
          contentType: 'text/plain',
        })),
      },
      ['attachments'],
    ],
    [
      'attachment not base64',
      {
        to: 'a@example.com',
        subject: 's',
        body: 'b',
        attachments: [{ filename: 'f.txt', content: '***', contentType: 'text/plain' }],
      },
      ['attachments.0.content'],
    ],
    [
      'attachments over 10 MB',
      {
        to: 'a@example.com',
        subject: 's',
        body: 'b',
        attachments: [
          {
            filename: 'big.bin',
            content: Buffer.alloc(10 * 1024 * 1024 + 1).toString('base64'),
            contentType: 'application/octet-stream',
          },
        ],
      },
      ['attachments'],
    ],
  ])('%s is 422 naming the field', async (_name, body, fields) => {
    const res = await send({ from: from(), ...body });
    expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(fieldsOf(res)).toEqual(fields);
  });

  test('CR/LF header injection is rejected in subject, addresses, names and custom headers', async () => {
    const base = { to: 'a@example.com', from: from(), subject: 's', body: 'b' };
    const attempts: [Record<string, unknown>, string][] = [
      [{ subject: 'Hi\r\nBcc: victim@example.com' }, 'subject'],
      [{ to: 'a@example.com\r\nBcc: victim@example.com' }, 'to'],
      [{ to: { name: 'A\r\nBcc: victim@example.com', email: 'a@example.com' } }, 'to.name'],
      [{ from: { name: 'Evil\nBcc: x@example.com', email: from() } }, 'from.name'],
      [{ from: from(), name: 'Evil\r\nBcc: x@example.com' }, 'name'],
      [{ reply: 'r@example.com\r\nBcc: x@example.com' }, 'reply'],
      [{ headers: { 'X-Ok': 'v\r\nBcc: victim@example.com' } }, 'headers.X-Ok'],
      [{ headers: { 'X-Bad\r\nBcc': 'victim@example.com' } }, 'headers.X-Bad\r\nBcc'],
      [{ headers: { 'X-Bad: y': 'v' } }, 'headers.X-Bad: y'],
      [{ headers: { Bcc: 'victim@example.com' } }, 'headers.Bcc'],
      [
        { attachments: [{ filename: 'a\r\n.txt', content: 'aGk=', contentType: 'text/plain' }] },
        'attachments.0.filename',
      ],
    ];
    for (const [patch, field] of attempts) {
      const res = await send({ ...base, ...patch });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(res)).toContain(field);
    }
    // A line break that arrives through a variable is flattened: no header is added, no one else is mailed.
    const to = recipient();
    await send({ ...base, to, subject: 'Hi {{name}}', data: { name: 'x\r\nBcc: victim@example.com' } });
    const [mail] = await waitForMail(to);
    expect(mail.parsed.subject).toBe('Hi x Bcc: victim@example.com');
    expect(mail.parsed.bcc).toBeUndefined();
    expect(await receivedMail('victim@example.com')).toEqual([]);
  });

  test('unknown/foreign template: 404; unverified sender domain: 403; a template without from needs one', async () => {
    expectEnvelope(
      await send({ to: 'a@example.com', template: '00000000-0000-4000-8000-000000000000' }),
      404,
      'TEMPLATE_NOT_FOUND',
    );
    const other = await newTenant();
    const otherDomain = (await verifiedDomain(other)).domain;
    const theirs = await call(
      'POST',
      '/templates',
      { name: 'x', subject: 's', body: 'b', from: `a@${otherDomain}` },
      { key: other.secretKey },
    );
    expectEnvelope(await send({ to: 'a@example.com', template: theirs.body.id }), 404, 'TEMPLATE_NOT_FOUND');
    const unverified = await send({ to: 'a@example.com', from: `a@${uniqueDomain()}`, subject: 's', body: 'b' });
    expectEnvelope(unverified, 403, 'INTERNAL_SERVER_ERROR');
    expect(unverified.body.error.message).toMatch(/not verified/);
    expect(unverified.body.error.details).toMatchObject({ reason: 'domain_not_verified' });
    expect(unverified.body.error.suggestion).toMatch(/POST \/domains/);
    expectEnvelope(
      await send({ to: 'a@example.com', from: `a@${otherDomain}`, subject: 's', body: 'b' }),
      403,
      'INTERNAL_SERVER_ERROR',
    );
    const missingFrom = await send({ to: 'a@example.com', subject: 's', body: 'b' });
    expectEnvelope(missingFrom, 422, 'VALIDATION_ERROR');
    expect(fieldsOf(missingFrom)).toEqual(['from']);
    const broken = await send({ to: 'a@example.com', from: from(), subject: 's', body: '{% for %}' });
    expectEnvelope(broken, 422, 'VALIDATION_ERROR');
    expect(broken.body.error.errors[0]).toMatchObject({ field: 'body', code: 'template_error' });
  });

  test('a variable is HTML-escaped in the body and as written in the subject; ?? fills a missing one', async () => {
    const to = recipient();
    const res = await send({
      to,
      from: `news@${domain}`,
      subject: 'For {{who}}',
      body: '<p>Dear {{who}}, plan {{plan ?? "free"}}</p>',
      data: { who: 'Tom & "Jerry" <tj>' },
    });
    expect(res.status).toBe(200);
    const [mail] = await waitForMail(to);
    expect(mail.parsed.subject).toBe('For Tom & "Jerry" <tj>');
    expect(mail.parsed.html).toContain('<p>Dear Tom &amp; &#34;Jerry&#34; &lt;tj&gt;, plan free</p>');
  });

  test('data keys __proto__, constructor, prototype are ordinary keys (as in contacts), read by Liquid', async () => {
    const data = JSON.parse('{"__proto__": {"tier": "gold"}, "constructor": "c", "prototype": "p", "once": {}}');
    data.once = { value: 'X1', persistent: false };
    // Through the gateway's lane and through Express (a query string), which map the body apart.
    for (const query of ['', '?via=express']) {
      const to = recipient('proto');
      const res = await call(
        'POST',
        `/v1/send${query}`,
        {
          to,
          from: from(),
          subject: 'Tier {{__proto__.tier}}',
          body: '<p>{{ __proto__.tier | upcase }} {{constructor}} {{prototype}} {{once}} {{data.__proto__.tier}}</p>',
          data,
        },
        { key: t.secretKey },
      );
      expect(res.status).toBe(200);
      const [mail] = await waitForMail(to);
      expect(mail.parsed.subject).toBe('Tier gold');
      expect(mail.parsed.html).toContain('<p>GOLD c p X1 gold</p>');
      const contact = await call('GET', `/contacts/${res.body.data.emails[0].contact.id}`, undefined, {
        key: t.secretKey,
      });
      expect(Object.keys(contact.body.data).sort()).toEqual(['__proto__', 'constructor', 'prototype']);
      expect(JSON.stringify(contact.body.data.__proto__)).toBe('{"tier":"gold"}');
      expect(Object.getPrototypeOf(contact.body.data)).toBe(Object.prototype);
    }
  });

  test('the deprecated name is the sender name only when from is a plain address', async () => {
    const a = recipient();
    await send({ to: a, from: from(), name: 'Fallback Name', subject: 's', body: 'b' });
    expect((await waitForMail(a))[0].parsed.from!.value[0].name).toBe('Fallback Name');
    const b = recipient();
    await send({ to: b, from: { name: 'Real', email: from() }, name: 'Ignored', subject: 's', body: 'b' });
    expect((await waitForMail(b))[0].parsed.from!.value[0].name).toBe('Real');
  });

  test("answers alike whether or not it takes the gateway's lane (a query string goes through Express)", async () => {
    const to = recipient('lane');
    const ok = { to, from: from(), subject: 'Lane {{n}}', body: '<p>{{n}}</p>', data: { n: 1 } };
    const cases: Array<{ raw?: string; body?: unknown; key?: string | null }> = [
      { body: ok },
      { body: [ok] },
      { raw: '{"to": "a@example.com",' },
      { raw: '"just a string"' },
      { raw: '\ufeff' },
      { body: { ...ok, to: 'not-an-email' } },
      { body: { ...ok, subject: 7 } },
      { body: { ...ok, data: { 'a\u0000': 1 } } },
      { body: { ...ok, data: JSON.parse(`${'['.repeat(40)}${']'.repeat(40)}`) } },
      { body: { ...ok, from: `hi@${uniqueEmail('x').split('@')[0]}.example.org` } },
      { body: ok, key: t.publicKey },
      { body: ok, key: 'sk_unknown' },
      { body: ok, key: null },
    ];
    const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
    const seen = (a: Awaited<ReturnType<typeof call>>) => ({
      status: a.status,
      body: JSON.parse(
        JSON.stringify(a.body)
          .replace(uuid, 'uuid')
          .replace(/"(requestId|timestamp)":"[^"]*"/g, '"$1":"..."'),
      ) as unknown,
      headers: ['content-type', 'x-ratelimit-limit', 'retry-after', 'idempotent-replayed'].map((h) => a.headers.get(h)),
      requestId: a.headers.get('x-request-id') !== null,
    });
    for (const c of cases) {
      const opts = { key: c.key === null ? undefined : (c.key ?? t.secretKey), raw: c.raw };
      const lane = await call('POST', '/v1/send', c.body, opts);
      const express = await call('POST', '/v1/send?via=express', c.body, opts);
      expect(seen(lane)).toEqual(seen(express));
    }
    // The accepted send queued a mail on each path.
    expect(await waitForMail(to, 2)).toHaveLength(2);
  });

  test('Idempotency-Key replays the answer without sending twice; reused with another body is 409', async () => {
    const to = recipient();
    const key = `send-${Date.now()}`;
    const body = { to, from: from(), subject: 'once', body: 'b' };
    const first = await send(body, { headers: { 'idempotency-key': key } });
    const again = await send(body, { headers: { 'idempotency-key': key } });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expectEnvelope(
      await send({ ...body, subject: 'other' }, { headers: { 'idempotency-key': key } }),
      409,
      'IDEMPOTENCY_KEY_REUSED',
    );
    await waitForMail(to);
    const marker = recipient();
    await send({ to: marker, from: from(), subject: 'marker', body: 'b' });
    await waitForMail(marker);
    expect(await receivedMail(to)).toHaveLength(1);
  });
});
