import { call, eventually, expectEnvelope, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { receivedMail, verifiedDomain, waitForMail } from './support/messaging.js';

// Campaigns through the gateway, delivered to the tests' SMTP sink: audiences, states, counters.

const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });
const planIs = (plan: string) => tree({ field: 'data.plan', operator: 'equals', value: plan });

let t: Tenant;
let other: Tenant;
let domain: string;
const c = (method: string, url: string, body?: unknown) => call(method, url, body, { key: t.secretKey });

async function contact(email: string, data: object, subscribed = true): Promise<string> {
  const res = await c('POST', '/contacts', { email, data, subscribed });
  if (res.status !== 201) throw new Error(`contact: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

const draft = (extra: object = {}) => ({
  name: 'Spring news',
  subject: 'Hello {{firstName ?? "there"}}',
  body: '<p>Hi {{firstName ?? "there"}}, plan {{plan}}</p>',
  from: `news@${domain}`,
  fromName: 'Acme',
  ...extra,
});

async function create(extra: object = {}): Promise<Record<string, any>> {
  const res = await c('POST', '/campaigns', draft(extra));
  if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

const status = async (id: string) => (await c('GET', `/campaigns/${id}`)).body.status as string;
const untilStatus = (id: string, wanted: string, timeoutMs = 20_000) =>
  eventually(async () => ((await status(id)) === wanted ? true : undefined), timeoutMs, `campaign ${wanted}`);
const total = async () => (await c('GET', '/campaigns?pageSize=100')).body.total as number;

beforeAll(async () => {
  [t, other] = await Promise.all([newTenant(), newTenant()]);
  domain = (await verifiedDomain(t)).domain;
});

describe('campaign CRUD', () => {
  test('POST answers {success, data} with a DRAFT: MARKETING to ALL by default, counters at zero', async () => {
    const res = await c('POST', '/campaigns', draft({ description: 'for everyone' }));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      success: true,
      data: {
        name: 'Spring news',
        description: 'for everyone',
        from: `news@${domain}`,
        fromName: 'Acme',
        type: 'MARKETING',
        status: 'DRAFT',
        audienceType: 'ALL',
        segmentId: null,
        audienceCondition: null,
        scheduledFor: null,
        totalRecipients: 0,
        sentCount: 0,
        openedCount: 0,
        projectId: t.projectId,
        sentAt: null,
      },
    });
    const got = await c('GET', `/campaigns/${res.body.data.id}`);
    expect(got.body).toEqual(res.body.data);
  });

  test('GET /campaigns: offset pages, status filter (unknown 400), search, sort and dir', async () => {
    const tag = `q${Date.now().toString(36)}`;
    const a = await create({ name: `${tag} alpha`, subject: 'One' });
    const b = await create({ name: `${tag} beta`, subject: `Two ${tag}` });
    const page = await c('GET', `/campaigns?search=${tag}&sort=name&dir=asc&pageSize=1`);
    expect(page.body).toMatchObject({ page: 1, pageSize: 1, total: 2, totalPages: 2 });
    expect(page.body.data[0].id).toBe(a.id);
    const desc = await c('GET', `/campaigns?search=${tag}&sort=name&dir=desc`);
    expect(desc.body.data.map((x: { id: string }) => x.id)).toEqual([b.id, a.id]);
    // Names of Object.prototype's members are unknown sorts (createdAt desc), not a 500.
    for (const sort of ['__proto__', 'constructor', 'toString']) {
      const res = await c('GET', `/campaigns?search=${tag}&sort=${sort}`);
      expect(res.status).toBe(200);
      expect(res.body.data.map((x: { id: string }) => x.id)).toEqual([b.id, a.id]);
    }
    // search covers the subject and the sender too
    expect((await c('GET', `/campaigns?search=Two%20${tag}`)).body.data.map((x: { id: string }) => x.id)).toEqual([
      b.id,
    ]);
    expect((await c('GET', `/campaigns?search=${domain}`)).body.total).toBeGreaterThanOrEqual(2);
    const drafts = await c('GET', '/campaigns?status=DRAFT&pageSize=100');
    expect(drafts.body.data.every((x: { status: string }) => x.status === 'DRAFT')).toBe(true);
    expect((await c('GET', '/campaigns?status=SENT')).body.data).toEqual([]);
    expectEnvelope(await c('GET', '/campaigns?status=DONE'), 400, 'BAD_REQUEST');
    expectEnvelope(await c('GET', '/campaigns?page=0'), 422, 'VALIDATION_ERROR');
  });

  test('PUT replaces a DRAFT (fields sent replace, others kept); duplicate makes a new DRAFT; DELETE', async () => {
    const x = await create();
    const put = await c('PUT', `/campaigns/${x.id}`, { name: 'Renamed', type: 'TRANSACTIONAL', fromName: null });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id: x.id,
      name: 'Renamed',
      type: 'TRANSACTIONAL',
      fromName: '',
      subject: x.subject,
    });
    const dup = await c('POST', `/campaigns/${x.id}/duplicate`);
    expect(dup.status).toBe(201);
    expect(dup.body).toMatchObject({ name: 'Renamed (copy)', status: 'DRAFT', type: 'TRANSACTIONAL' });
    expect(dup.body.id).not.toBe(x.id);
    expect((await c('DELETE', `/campaigns/${x.id}`)).status).toBe(204);
    expectEnvelope(await c('GET', `/campaigns/${x.id}`), 404, 'CAMPAIGN_NOT_FOUND');
  });

  test('bad bodies get 4xx naming the problem and store nothing', async () => {
    const seg = await call('POST', '/segments', { name: 'Theirs', condition: planIs('pro') }, { key: other.secretKey });
    const before = await total();
    const bad: Array<[object, number, string, string?]> = [
      [{ audienceType: 'SEGMENT' }, 422, 'VALIDATION_ERROR', 'segmentId'],
      [{ audienceType: 'FILTERED' }, 422, 'VALIDATION_ERROR', 'audienceCondition'],
      [{ audienceType: 'FILTERED', audienceCondition: 'everyone' }, 422, 'VALIDATION_ERROR', 'audienceCondition'],
      [{ segmentId: seg.body.id }, 422, 'VALIDATION_ERROR', 'segmentId'],
      [{ audienceType: 'SEGMENT', segmentId: seg.body.id }, 422, 'VALIDATION_ERROR', 'segmentId'],
      [{ audienceType: 'SEGMENT', segmentId: crypto.randomUUID() }, 422, 'VALIDATION_ERROR', 'segmentId'],
      [{ audienceType: 'SEGMENT', segmentId: 'not-a-uuid' }, 422, 'VALIDATION_ERROR', 'segmentId'],
      [{ audienceType: 'EVERYONE' }, 422, 'VALIDATION_ERROR', 'audienceType'],
      [
        { audienceType: 'FILTERED', audienceCondition: tree({ field: 'data.plan', operator: 'sortOf', value: 1 }) },
        422,
        'VALIDATION_ERROR',
        'audienceCondition',
      ],
      [{ name: 42 }, 422, 'VALIDATION_ERROR', 'name'],
      [{ subject: '' }, 422, 'VALIDATION_ERROR', 'subject'],
      [{ type: 'NEWSLETTER' }, 422, 'VALIDATION_ERROR', 'type'],
      // Liquid that cannot parse would fail every recipient at send: refused when saved, as a template's.
      [{ subject: 'Hi {{ firstName' }, 422, 'VALIDATION_ERROR', 'subject'],
      [{ body: '<p>{% if %}</p>' }, 422, 'VALIDATION_ERROR', 'body'],
      [{ from: 'news@unverified-domain.test' }, 403, 'INTERNAL_SERVER_ERROR'],
    ];
    for (const [extra, code, name, field] of bad) {
      const res = await c('POST', '/campaigns', draft(extra));
      expectEnvelope(res, code, name);
      if (field) expect(res.body.error.errors.map((e: { field: string }) => e.field.split('.')[0])).toContain(field);
    }
    const missing = await c('POST', '/campaigns', {});
    expect(missing.body.error.errors.map((e: { field: string }) => e.field)).toEqual([
      'name',
      'subject',
      'body',
      'from',
    ]);
    expectEnvelope(await c('POST', '/campaigns', [draft()]), 422, 'VALIDATION_ERROR');
    expectEnvelope(await c('POST', '/campaigns', draft({ name: null })), 422, 'VALIDATION_ERROR');
    expectEnvelope(await c('POST', '/campaigns', draft({ segmentId: 7 })), 422, 'VALIDATION_ERROR');
    expect(await total()).toBe(before);

    const x = await create();
    expectEnvelope(await c('PUT', `/campaigns/${x.id}`, { audienceType: 'SEGMENT' }), 422, 'VALIDATION_ERROR');
    const liquid = await c('PUT', `/campaigns/${x.id}`, { subject: '{{ a', body: '{% for %}' });
    expectEnvelope(liquid, 422, 'VALIDATION_ERROR');
    expect(liquid.body.error.errors.map((e: { field: string; code: string }) => [e.field, e.code])).toEqual([
      ['subject', 'template_error'],
      ['body', 'template_error'],
    ]);
    expectEnvelope(
      await c('PUT', `/campaigns/${x.id}`, { from: 'a@unverified-domain.test' }),
      403,
      'INTERNAL_SERVER_ERROR',
    );
    expect((await c('GET', `/campaigns/${x.id}`)).body).toMatchObject({
      audienceType: 'ALL',
      from: `news@${domain}`,
      subject: draft().subject,
      body: draft().body,
    });
    for (const id of [crypto.randomUUID(), 'nope']) {
      expectEnvelope(await c('GET', `/campaigns/${id}`), 404, 'CAMPAIGN_NOT_FOUND');
      expectEnvelope(await c('PUT', `/campaigns/${id}`, { name: 'x' }), 404, 'CAMPAIGN_NOT_FOUND');
      expectEnvelope(await c('DELETE', `/campaigns/${id}`), 404, 'CAMPAIGN_NOT_FOUND');
      expectEnvelope(await c('POST', `/campaigns/${id}/send`), 404, 'CAMPAIGN_NOT_FOUND');
      expectEnvelope(await c('POST', `/campaigns/${id}/cancel`), 404, 'CAMPAIGN_NOT_FOUND');
    }
    for (const scheduledFor of [{}, true, [1], 'soon']) {
      expectEnvelope(await c('POST', `/campaigns/${x.id}/send`, { scheduledFor }), 400, 'BAD_REQUEST');
    }
    // A body that is no object is refused, not read as {} (which means "send now").
    const listed = await c('POST', `/campaigns/${x.id}/send`, [{ scheduledFor: '2099-01-01T00:00:00Z' }]);
    expectEnvelope(listed, 422, 'VALIDATION_ERROR');
    expect(listed.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_type', received: 'array' });
    expect(await status(x.id)).toBe('DRAFT');
    // Another project's campaign is no campaign of this one.
    const theirs = await call('GET', `/campaigns/${x.id}`, undefined, { key: other.secretKey });
    expectEnvelope(theirs, 404, 'CAMPAIGN_NOT_FOUND');
  });
});

describe('sending', () => {
  let pro: string;
  let proUnsub: string;
  let free: string;
  let freeUnsub: string;
  let segmentId: string;
  beforeAll(async () => {
    [pro, proUnsub, free, freeUnsub] = [
      uniqueEmail('pro'),
      uniqueEmail('prou'),
      uniqueEmail('free'),
      uniqueEmail('freeu'),
    ];
    await contact(pro, { plan: 'pro', firstName: 'Pia' });
    await contact(proUnsub, { plan: 'pro', firstName: 'Paul' }, false);
    await contact(free, { plan: 'free', firstName: 'Fay' });
    await contact(freeUnsub, { plan: 'free' }, false);
    segmentId = (await c('POST', '/segments', { name: 'Pro', condition: planIs('pro') })).body.id;
  });

  /** Mails to each address carrying this campaign's unique subject. */
  const mailsOf = async (subject: string, to: string) =>
    (await receivedMail(to)).filter((m) => m.parsed.subject?.startsWith(subject)).length;

  async function sendAndWait(extra: object): Promise<{ id: string; subject: string }> {
    const subject = `S${Date.now().toString(36)}${Math.floor(Math.random() * 1e6)}`;
    const x = await create({ subject: `${subject} {{firstName ?? "there"}}`, ...extra });
    const sent = await c('POST', `/campaigns/${x.id}/send`, {});
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ success: true, data: { id: x.id, name: x.name, scheduledFor: null } });
    expect(['SENDING', 'SENT']).toContain(sent.body.data.status);
    expect(typeof sent.body.message).toBe('string');
    await untilStatus(x.id, 'SENT');
    return { id: x.id, subject };
  }

  test('MARKETING to ALL reaches exactly the subscribed contacts, personalised, and counts them', async () => {
    const { id, subject } = await sendAndWait({});
    const [mail] = await waitForMail(pro);
    expect(mail.parsed.subject).toContain(subject);
    expect((await waitForMail(free)).some((m) => m.parsed.subject === `${subject} Fay`)).toBe(true);
    expect(await mailsOf(subject, pro)).toBe(1);
    expect(await mailsOf(subject, proUnsub)).toBe(0);
    expect(await mailsOf(subject, freeUnsub)).toBe(0);
    const got = (await c('GET', `/campaigns/${id}`)).body;
    expect(got.totalRecipients).toBeGreaterThanOrEqual(2);
    expect(got.sentAt).not.toBeNull();
    // sentCount follows messaging's emails.sent messages, once per recipient.
    await eventually(
      async () => {
        const s = (await c('GET', `/campaigns/${id}/stats`)).body;
        return s.sent === got.totalRecipients ? s : undefined;
      },
      20_000,
      'sentCount',
    );
    const stats = (await c('GET', `/campaigns/${id}/stats`)).body;
    expect(stats).toMatchObject({ campaignId: id, status: 'SENT', pending: 0, failed: 0 });
    expect(stats.queued).toBe(got.totalRecipients);
  });

  test('SEGMENT: MARKETING reaches the subscribed members only, TRANSACTIONAL every member', async () => {
    const marketing = await sendAndWait({ audienceType: 'SEGMENT', segmentId });
    await eventually(async () => ((await mailsOf(marketing.subject, pro)) === 1 ? true : undefined));
    expect((await c('GET', `/campaigns/${marketing.id}`)).body.totalRecipients).toBe(1);
    expect(await mailsOf(marketing.subject, free)).toBe(0);
    expect(await mailsOf(marketing.subject, proUnsub)).toBe(0);

    const transactional = await sendAndWait({ audienceType: 'SEGMENT', segmentId, type: 'TRANSACTIONAL' });
    // Both are delivered concurrently: wait for each.
    for (const to of [proUnsub, pro])
      await eventually(async () => ((await mailsOf(transactional.subject, to)) === 1 ? true : undefined));
    expect(await mailsOf(transactional.subject, free)).toBe(0);
    expect((await c('GET', `/campaigns/${transactional.id}`)).body.totalRecipients).toBe(2);
  });

  test('FILTERED reaches the subscribed contacts matching the filter tree', async () => {
    const { id, subject } = await sendAndWait({ audienceType: 'FILTERED', audienceCondition: planIs('free') });
    await eventually(async () => ((await mailsOf(subject, free)) === 1 ? true : undefined));
    expect(await mailsOf(subject, freeUnsub)).toBe(0);
    expect(await mailsOf(subject, pro)).toBe(0);
    expect((await c('GET', `/campaigns/${id}`)).body.totalRecipients).toBe(1);
  });

  test('a scheduled campaign starts at its time; an unparseable time is 400; a past time sends now', async () => {
    const subject = `Sched${Date.now().toString(36)}`;
    const x = await create({ subject, audienceType: 'FILTERED', audienceCondition: planIs('pro') });
    expectEnvelope(
      await c('POST', `/campaigns/${x.id}/send`, { scheduledFor: 'next tuesday-ish' }),
      400,
      'BAD_REQUEST',
    );
    expect(await status(x.id)).toBe('DRAFT');
    const at = new Date(Date.now() + 2500).toISOString();
    const res = await c('POST', `/campaigns/${x.id}/send`, { scheduledFor: at });
    expect(res.body).toMatchObject({ success: true, data: { status: 'SCHEDULED', scheduledFor: at } });
    expect(await mailsOf(subject, pro)).toBe(0);
    await untilStatus(x.id, 'SENT', 20_000);
    await eventually(async () => ((await mailsOf(subject, pro)) === 1 ? true : undefined));
    expect(Date.now()).toBeGreaterThanOrEqual(new Date(at).getTime());

    const past = await create({ subject: `Past${Date.now().toString(36)}` });
    const now = await c('POST', `/campaigns/${past.id}/send`, { scheduledFor: '2001-02-03T04:05:06Z' });
    expect(['SENDING', 'SENT']).toContain(now.body.data.status);
    await untilStatus(past.id, 'SENT');
  });

  test('cancel while SCHEDULED returns to DRAFT (scheduledFor cleared, editable); other moves are 409', async () => {
    const x = await create({ audienceType: 'SEGMENT', segmentId });
    const at = new Date(Date.now() + 3_600_000).toISOString();
    expect((await c('POST', `/campaigns/${x.id}/send`, { scheduledFor: at })).body.data.status).toBe('SCHEDULED');
    // The segment is in use by a scheduled campaign: it cannot be deleted.
    expectEnvelope(await c('DELETE', `/segments/${segmentId}`), 409, 'CONFLICT');
    const put = await c('PUT', `/campaigns/${x.id}`, { name: 'too late' });
    expectEnvelope(put, 409, 'CONFLICT');
    expect(put.body.error.message).toContain('SCHEDULED');
    expectEnvelope(await c('POST', `/campaigns/${x.id}/send`), 409, 'CONFLICT');
    const upcoming = await c('GET', `/campaigns?status=SCHEDULED`);
    expect(upcoming.body.data.map((y: { id: string }) => y.id)).toContain(x.id);

    const cancelled = await c('POST', `/campaigns/${x.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ success: true, data: { id: x.id, status: 'DRAFT', scheduledFor: null } });
    expect((await c('GET', `/campaigns/${x.id}`)).body).toMatchObject({ status: 'DRAFT', scheduledFor: null });
    expect((await c('PUT', `/campaigns/${x.id}`, { name: 'Edited again' })).body.name).toBe('Edited again');
    const again = await c('POST', `/campaigns/${x.id}/cancel`);
    expectEnvelope(again, 409, 'CONFLICT');
    expect(again.body.error.message).toContain('DRAFT');
  });

  test('segments a scheduled audience reads through another segment stay; filters name only own segments', async () => {
    const base = (await c('POST', '/segments', { name: 'Base', condition: planIs('pro') })).body;
    const excluded = (await c('POST', '/segments', { name: 'Excluded', type: 'STATIC' })).body;
    const onTop = await c('POST', '/segments', {
      name: 'On top',
      condition: tree({ field: `segment.${base.id}`, operator: 'memberOfSegment' }),
    });
    expect(onTop.status).toBe(201);
    const bySegment = await create({ audienceType: 'SEGMENT', segmentId: onTop.body.id });
    const byFilter = await create({
      audienceType: 'FILTERED',
      audienceCondition: tree({ field: `segment.${excluded.id}`, operator: 'notMemberOfSegment' }),
    });
    const at = new Date(Date.now() + 3_600_000).toISOString();
    for (const x of [bySegment, byFilter])
      expect((await c('POST', `/campaigns/${x.id}/send`, { scheduledFor: at })).body.data.status).toBe('SCHEDULED');
    const inUse = await c('DELETE', `/segments/${base.id}`);
    expectEnvelope(inUse, 409, 'CONFLICT');
    expect(inUse.body.error.details).toEqual({ campaigns: 1, throughSegments: [onTop.body.id] });
    expectEnvelope(await c('DELETE', `/segments/${excluded.id}`), 409, 'CONFLICT');
    expect((await c('GET', `/segments/${onTop.body.id}`)).body.memberCount).toBe(2);

    // Once the campaigns are drafts again the segments go, and a filter naming a deleted (or another
    // project's) segment is refused at send and at create, not read as "everyone".
    for (const x of [bySegment, byFilter]) expect((await c('POST', `/campaigns/${x.id}/cancel`)).status).toBe(200);
    expect((await c('DELETE', `/segments/${excluded.id}`)).status).toBe(204);
    const send = await c('POST', `/campaigns/${byFilter.id}/send`, {});
    expectEnvelope(send, 422, 'VALIDATION_ERROR');
    expect(send.body.error.errors[0]).toMatchObject({ field: 'audienceCondition', code: 'not_found' });
    expect(await status(byFilter.id)).toBe('DRAFT');
    const theirs = await call('POST', '/segments', { name: 'Theirs', type: 'STATIC' }, { key: other.secretKey });
    const before = await total();
    for (const id of [excluded.id, theirs.body.id]) {
      const res = await c(
        'POST',
        '/campaigns',
        draft({
          audienceType: 'FILTERED',
          audienceCondition: tree({ field: `segment.${id}`, operator: 'memberOfSegment' }),
        }),
      );
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.errors[0]).toMatchObject({ field: 'audienceCondition', received: id });
    }
    expect(await total()).toBe(before);
  });

  test('a SENT campaign cannot be edited, sent or cancelled (409 naming SENT); duplicate and delete work', async () => {
    const { id } = await sendAndWait({ audienceType: 'FILTERED', audienceCondition: planIs('nobody') });
    for (const [method, path, body] of [
      ['PUT', '', { name: 'x' }],
      ['POST', '/send', {}],
      ['POST', '/cancel', undefined],
    ] as const) {
      const res = await c(method, `/campaigns/${id}${path}`, body);
      expectEnvelope(res, 409, 'CONFLICT');
      expect(res.body.error.message).toContain('SENT');
    }
    expect((await c('GET', `/campaigns/${id}`)).body.totalRecipients).toBe(0);
    expect((await c('POST', `/campaigns/${id}/duplicate`)).body.status).toBe('DRAFT');
    expect((await c('DELETE', `/campaigns/${id}`)).status).toBe(204);
  });

  test('a test send delivers one message personalised for the contact and counts nowhere', async () => {
    const subject = `Test${Date.now().toString(36)}`;
    const x = await create({ subject: `${subject} {{firstName ?? "there"}}` });
    const res = await c('POST', `/campaigns/${x.id}/test`, { email: pro });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, data: { email: pro, status: 'queued' } });
    await eventually(async () =>
      (await receivedMail(pro)).some((m) => m.parsed.subject === `${subject} Pia`) ? true : undefined,
    );
    // An address that is no contact gets the fallbacks.
    const stranger = uniqueEmail('stranger');
    expect((await c('POST', `/campaigns/${x.id}/test`, { email: stranger })).body.data.status).toBe('queued');
    const [mail] = await waitForMail(stranger);
    expect(mail.parsed.subject).toBe(`${subject} there`);
    expectEnvelope(await c('POST', `/campaigns/${x.id}/test`, { email: 'nope' }), 422, 'VALIDATION_ERROR');
    expectEnvelope(await c('POST', `/campaigns/${x.id}/test`, {}), 422, 'VALIDATION_ERROR');
    const after = (await c('GET', `/campaigns/${x.id}`)).body;
    expect(after).toMatchObject({ status: 'DRAFT', totalRecipients: 0, sentCount: 0 });
    expect((await c('GET', `/campaigns/${x.id}/stats`)).body).toMatchObject({ sent: 0, queued: 0 });
  });

  test("test mail is no engagement: the contact's events and the campaign's counters skip it", async () => {
    const tester = uniqueEmail('tester');
    const contactId = await contact(tester, { plan: 'qa', firstName: 'Tess' });
    const subject = `T${Date.now().toString(36)}`;
    const x = await create({ subject: `${subject} {{firstName}}` });
    expect((await c('POST', `/campaigns/${x.id}/test`, { email: tester })).body.data.status).toBe('queued');
    await eventually(async () => ((await mailsOf(subject, tester)) === 1 ? true : undefined));
    // A real message sent after the test one: once its email.sent event is recorded, the test one's would be too.
    const real = await call(
      'POST',
      '/v1/send',
      { to: tester, subject: 'Real one', body: '<p>real</p>', from: `news@${domain}` },
      { key: t.secretKey },
    );
    expect(real.status).toBe(200);
    const realId = real.body.data.emails[0].email;
    const names = await eventually(
      async () => {
        const events = (await c('GET', `/events/contact/${contactId}`)).body.data as Record<string, any>[];
        return events.some((e) => e.name === 'email.sent' && e.data?.emailId === realId) ? events : undefined;
      },
      20_000,
      'the real email.sent event',
    );
    expect(names.filter((e) => e.name.startsWith('email.')).map((e) => e.data?.emailId)).toEqual([realId]);
    expect((await c('GET', `/campaigns/${x.id}/stats`)).body).toMatchObject({ sent: 0, queued: 0 });
  });

  test('counters: opens and clicks unique per recipient, bounces, deliveries; rates in stats', async () => {
    const plan = `counters${Date.now().toString(36)}`;
    const [one, two, gone] = [uniqueEmail('one'), uniqueEmail('two'), uniqueEmail('bounce')];
    for (const e of [one, two, gone]) await contact(e, { plan });
    const { id } = await sendAndWait({
      audienceType: 'FILTERED',
      audienceCondition: planIs(plan),
      body: '<p>Hi</p><a href="https://example.org/offer">Offer</a>',
    });
    const [m1] = await waitForMail(one);
    const [m2] = await waitForMail(two);
    const links = (html: string) => ({
      pixel: /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1],
      click: [...html.matchAll(/href="([^"]+\/t\/c\/[^"]+)"/g)][0][1].replace(/&amp;/g, '&'),
    });
    const l1 = links(String(m1.parsed.html));
    const l2 = links(String(m2.parsed.html));
    for (const url of [l1.pixel, l1.pixel, l2.pixel, l1.click, l1.click]) {
      expect((await fetch(url, { redirect: 'manual' })).status).toBeLessThan(400);
    }
    const hook = await call(
      'POST',
      '/webhooks/generic',
      { type: 'delivery', messageId: m1.parsed.messageId },
      { headers: { 'x-webhook-secret': platform.env.WEBHOOK_SECRET } },
    );
    expect(hook.body.processed).toBe(1);
    const stats = await eventually(
      async () => {
        const s = (await c('GET', `/campaigns/${id}/stats`)).body;
        return s.sent === 2 && s.opened === 2 && s.clicked === 1 && s.bounced === 1 && s.delivered === 1
          ? s
          : undefined;
      },
      20_000,
      'counters',
    );
    expect(stats).toMatchObject({ totalRecipients: 3, openRate: 100, clickRate: 50, deliveryRate: 50 });
    expect(stats.bounceRate).toBeCloseTo(33.33, 2);
    expect((await c('GET', `/campaigns/${id}`)).body).toMatchObject({
      sentCount: 2,
      deliveredCount: 1,
      openedCount: 2,
      clickedCount: 1,
      bouncedCount: 1,
    });
  });

  test('analytics: top campaigns by a metric, per-campaign stats with rates', async () => {
    const top = await c('GET', '/analytics/top-campaigns?metric=sent&limit=3');
    expect(top.status).toBe(200);
    expect(top.body.metric).toBe('sent');
    expect(top.body.data.length).toBeGreaterThan(0);
    expect(top.body.data.length).toBeLessThanOrEqual(3);
    const sents = top.body.data.map((s: { sent: number }) => s.sent);
    expect([...sents].sort((a, b) => b - a)).toEqual(sents);
    expectEnvelope(await c('GET', '/analytics/top-campaigns?metric=revenue'), 400, 'BAD_REQUEST');
    const stats = await c('GET', '/analytics/campaign-stats?pageSize=50');
    expect(stats.body).toMatchObject({ page: 1, pageSize: 50 });
    // Newest send first: the counters test's campaign, with its rates.
    expect(stats.body.data[0]).toMatchObject({ opened: 2, clicked: 1, openRate: 100, clickRate: 50, status: 'SENT' });
    const opened = await c('GET', '/analytics/top-campaigns');
    expect(opened.body.metric).toBe('opened');
    expect(opened.body.data[0].campaignId).toBe(stats.body.data[0].campaignId);
    expect(stats.body.data.every((s: { sentAt: string | null }) => s.sentAt !== null)).toBe(true);
  });
});
