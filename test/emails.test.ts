import { call, eventually, expectEnvelope, newTenant, uniqueEmail, type Tenant } from './support/client.js';
import { receivedMail, smtpAttempts, verifiedDomain, waitForMail } from './support/messaging.js';

// Why a message did not go: /v1/send says queued or suppressed (with the reason), withheld mail is in
// /activity as email.suppressed, and GET /emails(/{id}) shows status, attempts, SMTP answers and timeline.

let t: Tenant;
let domain: string;
let marketingTemplate: string;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
  const template = await call(
    'POST',
    '/templates',
    { name: 'News', subject: 'News', body: '<p>news</p>', from: `news@${domain}`, type: 'MARKETING' },
    { key: t.secretKey },
  );
  expect(template.status).toBe(201);
  marketingTemplate = template.body.id;
});

const send = (body: Record<string, unknown>, tenant = t) =>
  call(
    'POST',
    '/v1/send',
    { from: `hi@${domain}`, subject: 's', body: '<p>b</p>', ...body },
    { key: tenant.secretKey },
  );
const get = (url: string, tenant = t) => call('GET', url, undefined, { key: tenant.secretKey });

/** GET /emails/{id} once the message reached one of `statuses`. */
const settled = (id: string, statuses: string[]) =>
  eventually(async () => {
    const res = await get(`/emails/${id}`);
    return statuses.includes(res.body.status) ? res.body : undefined;
  });

describe('why a message did not go', () => {
  test('MARKETING mail to a new (unsubscribed) contact is suppressed/unsubscribed and in /activity', async () => {
    const to = uniqueEmail('promo');
    const res = await send({ to, template: marketingTemplate, subject: undefined, body: undefined, from: undefined });
    expect(res.status).toBe(200);
    const [item] = res.body.data.emails;
    expect(item).toMatchObject({ contact: { email: to }, status: 'suppressed', reason: 'unsubscribed' });

    const feed = await get('/activity?type=email.suppressed');
    expect(feed.body.data).toHaveLength(1);
    expect(feed.body.data[0]).toMatchObject({
      type: 'email.suppressed',
      emailId: item.email,
      contactId: item.contact.id,
      email: to,
      data: { reason: 'unsubscribed', subject: 'News', templateId: marketingTemplate },
    });
    expect((await get('/activity/types')).body.types).toContain('email.suppressed');

    const detail = await get(`/emails/${item.email}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({
      id: item.email,
      status: 'suppressed',
      reason: 'unsubscribed',
      attemptCount: 0,
    });
    expect(detail.body.attempts).toEqual([]);
    expect(detail.body.timeline).toEqual([{ type: 'suppressed', at: expect.any(String), detail: 'unsubscribed' }]);

    // Subscribed, the same contact gets it: queued, no reason.
    const again = await send({
      to,
      template: marketingTemplate,
      subscribed: true,
      subject: undefined,
      body: undefined,
      from: undefined,
    });
    expect(again.body.data.emails[0]).toEqual({ contact: item.contact, email: expect.any(String), status: 'queued' });
    await waitForMail(to);
  });

  test('a hard-bounced address is then suppressed/bounced; a complained one suppressed/complained', async () => {
    const bouncing = uniqueEmail('bounce-x');
    const first = await send({ to: bouncing });
    expect(first.body.data.emails[0]).toMatchObject({ status: 'queued' });
    const bounced = await settled(first.body.data.emails[0].email, ['bounced']);
    expect(bounced.attemptCount).toBe(1);
    expect(bounced.lastError).toMatch(/Mailbox does not exist/);
    expect(bounced.timeline.map((s: { type: string }) => s.type)).toEqual(['queued', 'bounced']);
    expect(bounced.attempts).toEqual([
      {
        attempt: 1,
        outcome: 'bounced',
        smtpCode: 550,
        smtpResponse: expect.stringMatching(/^550 /),
        at: expect.any(String),
      },
    ]);

    const second = await send({ to: bouncing });
    expect(second.body.data.emails[0]).toMatchObject({ status: 'suppressed', reason: 'bounced' });
    expect(await smtpAttempts(bouncing)).toBe(1);
    const feed = await eventually(async () => {
      const res = await get(`/activity?type=email.suppressed&contactId=${second.body.data.emails[0].contact.id}`);
      return res.body.data.length === 1 ? res.body.data : undefined;
    });
    expect(feed[0].data.reason).toBe('bounced');

    // A complaint (provider webhook) suppresses the address as complained.
    const to = uniqueEmail('complainer');
    const sent = await send({ to });
    await waitForMail(to);
    const hook = await call(
      'POST',
      '/webhooks/generic',
      { type: 'complaint', emailId: sent.body.data.emails[0].email },
      { headers: { 'x-webhook-secret': 'test-webhook-secret-0123456789' } },
    );
    expect(hook.body).toMatchObject({ processed: 1 });
    const after = await send({ to });
    expect(after.body.data.emails[0]).toMatchObject({ status: 'suppressed', reason: 'complained' });
    const complained = await get(`/emails/${sent.body.data.emails[0].email}`);
    expect(complained.body.status).toBe('complained');
    expect(complained.body.timeline.map((s: { type: string }) => s.type)).toEqual(['queued', 'sent', 'complained']);
  });

  test('GET /emails/{id}: attempts, SMTP answers and timeline after a tempfail, a success, an open', async () => {
    const to = uniqueEmail('tempfail-x');
    const res = await send({ to, body: '<p>hello</p>' });
    const id = res.body.data.emails[0].email;
    const [mail] = await waitForMail(to);
    const email = await settled(id, ['sent', 'delivered']);
    expect(email).toMatchObject({ id, to, from: `hi@${domain}`, subject: 's', attemptCount: 2, type: 'TRANSACTIONAL' });
    expect(email.sentAt).toEqual(expect.any(String));
    expect(email.timeline.map((s: { type: string }) => s.type)).toEqual(['queued', 'deferred', 'sent']);
    expect(email.timeline[1].detail).toMatch(/^451 .*Greylisted/);

    const detail = (await get(`/emails/${id}`)).body;
    expect(detail.attempts).toEqual([
      {
        attempt: 1,
        outcome: 'retry',
        smtpCode: 451,
        smtpResponse: expect.stringMatching(/Greylisted/),
        at: expect.any(String),
      },
      {
        attempt: 2,
        outcome: 'sent',
        smtpCode: 250,
        smtpResponse: expect.stringMatching(/^250 /),
        at: expect.any(String),
      },
    ]);
    expect(Date.parse(detail.attempts[0].at)).toBeLessThanOrEqual(Date.parse(detail.attempts[1].at));

    // Opening the mail adds `opened` to the timeline.
    const pixel = /src="([^"]+\/t\/o\/[^"]+)"/.exec(mail.parsed.html as string)![1].replace(/&amp;/g, '&');
    expect((await fetch(pixel)).status).toBe(200);
    const opened = await eventually(async () => {
      const body = (await get(`/emails/${id}`)).body;
      return body.opens === 1 ? body : undefined;
    });
    expect(opened.timeline.map((s: { type: string }) => s.type)).toEqual(['queued', 'deferred', 'sent', 'opened']);
    expect(await receivedMail(to)).toHaveLength(1);
  });
});

describe('GET /emails', () => {
  let tenant: Tenant;
  let d: string;
  let templateId: string;
  const sent: { id: string; contactId: string; to: string }[] = [];

  beforeAll(async () => {
    tenant = await newTenant();
    d = (await verifiedDomain(tenant)).domain;
    templateId = (
      await call(
        'POST',
        '/templates',
        { name: 'T', subject: 'Templated', body: '<p>t</p>', from: `t@${d}`, type: 'TRANSACTIONAL' },
        { key: tenant.secretKey },
      )
    ).body.id;
    for (const body of [
      { subject: 'one', body: '<p>1</p>' },
      { template: templateId },
      { subject: 'three', body: '<p>3</p>' },
    ]) {
      const to = uniqueEmail('list');
      const res = await call('POST', '/v1/send', { to, from: `hi@${d}`, ...body }, { key: tenant.secretKey });
      expect(res.status).toBe(200);
      sent.push({ id: res.body.data.emails[0].email, contactId: res.body.data.emails[0].contact.id, to });
    }
    for (const s of sent) await waitForMail(s.to);
  });

  const list = (query = '') => get(`/emails${query}`, tenant);

  test('newest first, cursor pages as SPEC.md (total on the first page only)', async () => {
    const all = await list();
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 3, hasMore: false, cursor: '' });
    expect(all.body.data.map((e: { id: string }) => e.id)).toEqual(sent.map((s) => s.id).reverse());
    expect(all.body.data[0]).toMatchObject({ to: sent[2].to, subject: 'three', reason: null });

    const page1 = await list('?limit=2');
    expect(page1.body).toMatchObject({ total: 3, hasMore: true });
    expect(page1.body.data).toHaveLength(2);
    const page2 = await list(`?limit=2&cursor=${page1.body.cursor}`);
    expect(page2.body).toMatchObject({ total: 0, hasMore: false, cursor: '' });
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual([sent[0].id]);
    expect((await list('?limit=1000')).body.data).toHaveLength(3); // clamped to 100
  });

  test('filters: status, contactId, templateId, campaignId, from/to dates', async () => {
    const ids = async (query: string) => {
      const res = await list(query);
      expect(res.status).toBe(200);
      return res.body.data.map((e: { id: string }) => e.id);
    };
    await eventually(async () => ((await ids('?status=sent,delivered')).length === 3 ? true : undefined));
    expect(await ids('?status=suppressed')).toEqual([]);
    expect(await ids(`?contactId=${sent[1].contactId}`)).toEqual([sent[1].id]);
    expect(await ids(`?templateId=${templateId}`)).toEqual([sent[1].id]);
    expect(await ids(`?campaignId=${crypto.randomUUID()}`)).toEqual([]);
    const today = new Date().toISOString().slice(0, 10);
    expect(await ids(`?from=${today}&to=${today}`)).toHaveLength(3);
    expect(await ids('?to=2020-01-01')).toEqual([]);
    expect(await ids(`?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toEqual([]);
    const filtered = await list(`?status=sent,delivered&templateId=${templateId}`);
    expect(filtered.body).toMatchObject({ total: 1, hasMore: false });
  });

  test('bad parameters are 400/422 in the error envelope', async () => {
    expectEnvelope(await list('?limit=abc'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await list('?status=lost'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await list('?contactId=nope'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await list('?templateId=1'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await list('?campaignId=x'), 422, 'VALIDATION_ERROR');
    expect((await list('?from=yesterday')).status).toBe(400);
    expect((await list('?from=2026-02-30')).status).toBe(400);
    expect((await list('?from=2026-03-02&to=2026-03-01')).status).toBe(400);
    expect((await list('?cursor=garbage')).status).toBe(400);
    expectEnvelope(await list('?cursor=garbage'), 400, 'BAD_REQUEST');
  });

  test("another project's email is a 404; so is an unknown or malformed id; keys are required", async () => {
    const own = await get(`/emails/${sent[0].id}`, tenant);
    expect(own.status).toBe(200);
    expectEnvelope(await get(`/emails/${sent[0].id}`, t), 404, 'RESOURCE_NOT_FOUND');
    expectEnvelope(await get(`/emails/${crypto.randomUUID()}`, tenant), 404, 'RESOURCE_NOT_FOUND');
    expectEnvelope(await get('/emails/not-a-uuid', tenant), 404, 'RESOURCE_NOT_FOUND');
    // Another project's list never shows these emails.
    expect((await get(`/emails?contactId=${sent[0].contactId}`, t)).body).toMatchObject({ data: [], total: 0 });
    expectEnvelope(await call('GET', '/emails', undefined, { key: tenant.publicKey }), 401, 'INVALID_API_KEY');
    expect((await call('GET', '/emails')).status).toBe(401);
    const wrongMethod = await call('POST', `/emails/${sent[0].id}`, {}, { key: tenant.secretKey });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toMatch(/GET/);
  });
});
