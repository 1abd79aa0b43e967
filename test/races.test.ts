import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { call, eventually, expectEnvelope, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { csvForm, importCsv } from './support/csv.js';
import { verifiedDomain } from './support/messaging.js';

// Concurrency through the gateway as a busy integration (or an attacker) triggers it: many requests at once,
// identical or conflicting. Each race is repeated a few rounds so an ordering that breaks a rule shows up.

const ROUNDS = 6;
const all = <T>(n: number, f: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)));
const tree = (plan: string) => ({
  logic: 'AND',
  groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: plan }] }],
});

let t: Tenant;
const c = (method: string, url: string, body?: unknown, headers?: Record<string, string>) =>
  call(method, url, body, { key: t.secretKey, headers });

beforeAll(async () => {
  t = await newTenant();
});

test('two contacts renamed to one address at once: one 200, one 409 (never a 500)', async () => {
  for (let round = 0; round < ROUNDS; round++) {
    const [a, b] = await Promise.all(
      [uniqueEmail('ren-a'), uniqueEmail('ren-b')].map((email) => c('POST', '/contacts', { email })),
    );
    const target = uniqueEmail('ren-same');
    const answers = await Promise.all([a, b].map((x) => c('PATCH', `/contacts/${x.body.id}`, { email: target })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    expectEnvelope(answers.find((r) => r.status === 409)!, 409, 'CONFLICT');
    const found = await c('POST', '/contacts/lookup', { emails: [target] });
    expect(found.body.found).toHaveLength(1);
  }
});

test('one Idempotency-Key on different /v1/send bodies at once: one send, others 409 naming its status', async () => {
  const { domain } = await verifiedDomain(t);
  for (let round = 0; round < ROUNDS; round++) {
    const key = `race-${uniqueEmail('key')}`;
    const recipients = Array.from({ length: 6 }, () => uniqueEmail('idem-diff'));
    const answers = await all(recipients.length, (i) =>
      c(
        'POST',
        '/v1/send',
        { to: recipients[i], subject: 's', body: '<p>b</p>', from: `a@${domain}` },
        {
          'idempotency-key': key,
        },
      ),
    );
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of answers.filter((x) => x.status !== 200)) {
      expectEnvelope(r, 409, 'IDEMPOTENCY_KEY_REUSED');
      expect(r.body.error.details).toMatchObject({
        key,
        originalRequest: { method: 'POST', path: '/v1/send' },
        originalRequestAt: expect.any(String),
        originalStatusCode: 200,
      });
    }
    const sent = await all(recipients.length, async (i) => {
      const found = await c('POST', '/contacts/lookup', { emails: [recipients[i]] });
      const id = found.body.found[0]?.id;
      return id ? (await c('GET', `/emails?contactId=${id}`)).body.data.length : 0;
    });
    expect(sent.reduce((x, y) => x + y, 0)).toBe(1);
  }
});

test('a campaign send racing a PUT that widens its audience never starts what the email cap refuses', async () => {
  const x = await newTenant();
  const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: x.secretKey });
  const { domain } = await verifiedDomain(x);
  for (let i = 0; i < 3; i++) await api('POST', '/contacts', { email: uniqueEmail('wide'), data: { plan: 'wide' } });
  const limits = await call(
    'PUT',
    `/users/@me/projects/${x.projectId}/billing-limits`,
    { emails: 2 },
    { cookie: x.cookie },
  );
  expect(limits.status).toBe(200);
  const draft = async (plan: string) =>
    (
      await api('POST', '/campaigns', {
        name: 'race',
        subject: 's',
        body: 'b',
        from: `n@${domain}`,
        audienceType: 'FILTERED',
        audienceCondition: tree(plan),
      })
    ).body.data.id as string;
  // Caps are cached for a few seconds: wait until a campaign to the wide audience is refused.
  await eventually(async () =>
    (await api('POST', `/campaigns/${await draft('wide')}/send`)).status === 402 ? true : undefined,
  );

  for (let round = 0; round < ROUNDS * 2; round++) {
    // An audience of nobody fits any cap (and spends nothing); the PUT makes it three recipients, over the cap.
    const id = await draft('nobody');
    const [send, put] = await Promise.all([
      api('POST', `/campaigns/${id}/send`),
      api('PUT', `/campaigns/${id}`, { audienceCondition: tree('wide') }),
    ]);
    // PUT first: the send checks the new audience (402). Send first: the PUT finds no draft (409).
    expect([send.status, put.status]).not.toEqual([200, 200]);
    expect([
      [200, 409],
      [402, 200],
    ]).toContainEqual([send.status, put.status]);
  }
});

test('a project reset while a CSV import runs: the import stops, nothing of it is left', async () => {
  const x = await newTenant();
  const stamp = Date.now().toString(36);
  const csv = ['email,plan', ...Array.from({ length: 40_000 }, (_, i) => `imp${i}-${stamp}@example.com,p`)].join('\n');
  const started = await call('POST', '/contacts/import', undefined, { key: x.secretKey, raw: csvForm(csv) });
  expect(started.status).toBe(202);
  await eventually(async () => {
    const job = await call('GET', `/contacts/import/${started.body.jobId}`, undefined, { key: x.secretKey });
    return job.body.processed > 0 ? true : undefined;
  });
  const owner = { cookie: x.cookie };
  expect((await call('POST', `/users/@me/projects/${x.projectId}/reset`, undefined, owner)).status).toBe(202);
  await eventually(async () => {
    const res = await call('GET', `/users/@me/projects/${x.projectId}/reset`, undefined, owner);
    return res.body.status === 'completed' ? true : undefined;
  }, 30_000);
  // Imports run one at a time: once this one is done, the first one is no longer writing.
  const after = await importCsv(x, `email\nafter-${stamp}@example.com\n`);
  expect(after).toMatchObject({ status: 'completed', imported: 1 });
  const contacts = await call('GET', '/contacts?limit=5', undefined, { key: x.secretKey });
  expect(contacts.body.total).toBe(1);
});

test('a segment deleted while another comes to name it: one of the two is refused, no reference dangles', async () => {
  const plain = tree('nobody');
  const naming = (id: string) => ({
    logic: 'AND',
    groups: [{ filters: [{ field: `segment.${id}`, operator: 'memberOfSegment' }] }],
  });
  const segment = async (name: string) => (await c('POST', '/segments', { name, condition: plain })).body.id as string;
  for (let round = 0; round < ROUNDS; round++) {
    const [named, other] = await Promise.all([segment(`Named ${round}`), segment(`Other ${round}`)]);
    const [patched, deleted] = await Promise.all([
      c('PATCH', `/segments/${other}`, { condition: naming(named) }),
      c('DELETE', `/segments/${named}`),
    ]);
    // PATCH first: the DELETE sees the reference (409). DELETE first: the PATCH names a missing segment (422).
    expect([
      [200, 409],
      [422, 204],
    ]).toContainEqual([patched.status, deleted.status]);
    const named2 = await segment(`Named again ${round}`);
    const [created, deleted2] = await Promise.all([
      c('POST', '/segments', { name: `Naming ${round}`, condition: naming(named2) }),
      c('DELETE', `/segments/${named2}`),
    ]);
    expect([
      [201, 409],
      [422, 204],
    ]).toContainEqual([created.status, deleted2.status]);
  }
  // Every stored reference names a segment that exists.
  const stored = (await c('GET', '/segments')).body as { id: string; condition: unknown }[];
  const ids = new Set(stored.map((s) => s.id));
  for (const s of stored)
    for (const id of JSON.stringify(s.condition).match(/segment\.([0-9a-f-]{36})/g) ?? [])
      expect(ids.has(id.slice('segment.'.length))).toBe(true);
});

test('a segment deleted while a campaign comes to send to it: either is refused, nothing goes to nobody', async () => {
  const x = await newTenant();
  const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: x.secretKey });
  const { domain } = await verifiedDomain(x);
  await api('POST', '/contacts', { email: uniqueEmail('seg-send'), subscribed: true, data: { plan: 'seg' } });
  const naming = (id: string) => ({
    logic: 'AND',
    groups: [{ filters: [{ field: `segment.${id}`, operator: 'memberOfSegment' }] }],
  });
  // A SEGMENT audience, then a FILTERED one naming the segment: both are what the segment's DELETE looks for.
  const audiences = [
    (id: string) => ({ audienceType: 'SEGMENT', segmentId: id }),
    (id: string) => ({ audienceType: 'FILTERED', audienceCondition: naming(id) }),
  ];
  for (let round = 0; round < ROUNDS * 2; round++) {
    const segment = await api('POST', '/segments', { name: `Send ${round}`, condition: tree('seg') });
    expect(segment.body.memberCount).toBe(1);
    const audience = audiences[round % 2](segment.body.id);
    const draft = await api('POST', '/campaigns', {
      name: 'r',
      subject: 's',
      body: 'b',
      from: `n@${domain}`,
      ...audience,
    });
    const id = draft.body.data.id as string;
    const [sent, deleted] = await Promise.all([
      api('POST', `/campaigns/${id}/send`),
      api('DELETE', `/segments/${segment.body.id}`),
    ]);
    // Send first: the DELETE sees a SENDING campaign (409), or a campaign already SENT to its member (204). DELETE
    // first: the send finds the segment gone (422) or being deleted (409), and the campaign stays a draft.
    if (sent.status === 200) {
      expect([204, 409]).toContain(deleted.status);
      const done = await eventually(async () => {
        const stats = await api('GET', `/campaigns/${id}/stats`);
        return stats.body.status === 'SENT' ? stats.body : undefined;
      }, 30_000);
      expect(done.totalRecipients).toBe(1);
    } else {
      expect(deleted.status).toBe(204);
      expect([409, 422]).toContain(sent.status);
      expect(JSON.stringify(sent.body.error)).toContain(segment.body.id);
      expect((await api('GET', `/campaigns/${id}`)).body.status).toBe('DRAFT');
    }
  }
});

test('a template deleted while a workflow step comes to send it: one of the two is refused, none dangles', async () => {
  const x = await newTenant();
  const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: x.secretKey });
  const { domain } = await verifiedDomain(x);
  const template = async (round: number) =>
    (await api('POST', '/templates', { name: `T ${round}`, subject: 's', body: 'b', from: `n@${domain}` })).body
      .id as string;
  const w = (await api('POST', '/workflows', { name: 'tpl race', eventName: 'tpl.race' })).body.id as string;
  const inline = { subject: 's', body: 'b', from: `n@${domain}` };
  const edited = (await api('POST', `/workflows/${w}/steps`, { type: 'SEND_EMAIL', config: inline })).body.id;
  for (let round = 0; round < ROUNDS * 2; round++) {
    const tpl = await template(round);
    const config = { templateId: tpl };
    // A new step naming the template, then an edit that comes to name it.
    const [named, deleted] = await Promise.all([
      round % 2
        ? api('PATCH', `/workflows/${w}/steps/${edited}`, { config })
        : api('POST', `/workflows/${w}/steps`, { type: 'SEND_EMAIL', config }),
      api('DELETE', `/templates/${tpl}`),
    ]);
    // Step first: the DELETE sees it (409). DELETE first: the step finds the template gone (422) or being
    // deleted (409).
    if (named.status === 200 || named.status === 201) expectEnvelope(deleted, 409, 'CONFLICT');
    else {
      expect(deleted.status).toBe(204);
      expect([409, 422]).toContain(named.status);
    }
    if (round % 2 && named.status === 200) {
      // Back to inline content: the template is free again, and deleted for the next round's count.
      expect((await api('PATCH', `/workflows/${w}/steps/${edited}`, { config: inline })).status).toBe(200);
    }
  }
  // Every step that names a template names one that exists.
  const steps = (await api('GET', `/workflows/${w}`)).body.steps as { config: { templateId?: string } }[];
  for (const s of steps.filter((x) => x.config.templateId))
    expect((await api('GET', `/templates/${s.config.templateId}`)).status).toBe(200);
});

test('a segment deleted while a workflow comes to listen for its entry or exit: either is refused', async () => {
  const x = await newTenant();
  const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: x.secretKey });
  // A segment the project does not have: nothing would ever start the workflow.
  const none = await api('POST', '/workflows', { name: 'none', eventName: 'segment.no-such-segment.entry' });
  expectEnvelope(none, 422, 'VALIDATION_ERROR');
  expect(none.body.error.errors[0]).toMatchObject({ field: 'eventName', message: expect.stringContaining('no-such') });
  const edited = (await api('POST', '/workflows', { name: 'edited', eventName: 'seg.race' })).body;
  const delay = await api('POST', `/workflows/${edited.id}/steps`, {
    type: 'DELAY',
    config: { amount: 1, unit: 'days' },
  });
  const link = { fromStepId: edited.steps[0].id, toStepId: delay.body.id };
  expect((await api('POST', `/workflows/${edited.id}/transitions`, link)).status).toBe(201);
  const waiting = (await api('POST', '/workflows', { name: 'waiting', eventName: 'seg.race' })).body.id as string;
  const timeout = { amount: 1, unit: 'days' };
  // A new workflow on the segment's entry, an edit (and enable) that comes to start on its exit, a wait for it.
  const writes = [
    (slug: string) => api('POST', '/workflows', { name: `on ${slug}`, eventName: `segment.${slug}.entry` }),
    (slug: string) => api('PATCH', `/workflows/${edited.id}`, { eventName: `segment.${slug}.exit`, enabled: true }),
    (slug: string) =>
      api('POST', `/workflows/${waiting}/steps`, {
        type: 'WAIT_FOR_EVENT',
        config: { eventName: `segment.${slug}.entry`, timeout },
      }),
  ];
  for (let round = 0; round < ROUNDS * 3; round++) {
    const segment = await api('POST', '/segments', {
      name: `Listened ${round}`,
      trackMembership: true,
      condition: tree('l'),
    });
    const slug = segment.body.slug as string;
    const [written, deleted] = await Promise.all([
      writes[round % writes.length](slug),
      api('DELETE', `/segments/${segment.body.id}`),
    ]);
    // Workflow first: the DELETE sees it (409). DELETE first: the workflow finds the segment gone (422) or being
    // deleted (409), and nothing of it is stored.
    if (written.status === 200 || written.status === 201) expectEnvelope(deleted, 409, 'CONFLICT');
    else {
      expect(deleted.status).toBe(204);
      expect([409, 422]).toContain(written.status);
      expect(JSON.stringify(written.body.error)).toContain(slug);
    }
  }
  // Every workflow that starts on or waits for a segment's event names a segment that exists.
  const slugs = new Set(((await api('GET', '/segments')).body as { slug: string }[]).map((s) => s.slug));
  const list = (await api('GET', '/workflows?pageSize=100')).body.data as { id: string }[];
  for (const { id } of list) {
    const w = (await api('GET', `/workflows/${id}`)).body;
    const names = [
      w.triggerConfig.eventName,
      ...w.steps.map((s: { config: { eventName?: string } }) => s.config.eventName),
    ];
    for (const name of names.filter((n) => n?.startsWith('segment.')))
      expect(slugs.has(name.replace(/^segment\.(.+)\.(entry|exit)$/, '$1'))).toBe(true);
  }
});

const emailsOf = async (db: pg.Client, projectId: string) =>
  (await db.query('SELECT count(*)::int AS n FROM emails WHERE project_id = $1', [projectId])).rows[0].n as number;

/**
 * `rounds` times: a new tenant's mail set in flight by `start`, then its project deleted at once; once the wipe is
 * over, messaging keeps no email of it.
 */
async function deletedMidFlight(rounds: number, start: (x: Tenant, db: pg.Client) => Promise<void>): Promise<void> {
  const db = new pg.Client({
    connectionString: serviceDatabaseUrl('messaging', platform.env.DATABASE_URL, platform.env),
  });
  await db.connect();
  try {
    for (let round = 0; round < rounds; round++) {
      const x = await newTenant();
      await start(x, db);
      const owner = { cookie: x.cookie };
      expect((await call('DELETE', `/users/@me/projects/${x.projectId}`, undefined, owner)).status).toBe(202);
      await eventually(async () => {
        const wipe = await call('GET', `/users/@me/projects/${x.projectId}/reset`, undefined, owner);
        return wipe.status === 404 ? true : undefined;
      }, 60_000);
      expect(await emailsOf(db, x.projectId)).toBe(0);
    }
  } finally {
    await db.end();
  }
}

test('a project deleted while a campaign hands mail over: messaging keeps no email of it', async () => {
  await deletedMidFlight(4, async (x) => {
    const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: x.secretKey });
    const { domain } = await verifiedDomain(x);
    const stamp = Date.now().toString(36);
    await importCsv(
      x,
      ['email', ...Array.from({ length: 6000 }, (_, i) => `hand${i}-${stamp}@example.com`)].join('\n'),
    );
    const id = (await api('POST', '/campaigns', { name: 'r', subject: 's', body: 'b', from: `n@${domain}` })).body.data
      .id;
    expect((await api('POST', `/campaigns/${id}/send`)).status).toBe(200);
    // Deleted once the hand-over runs: its next round is in flight at that moment or soon after.
    await eventually(async () => ((await api('GET', `/campaigns/${id}/stats`)).body.queued > 0 ? true : undefined));
  });
});

test('a project deleted while workflows send mail: messaging keeps no email of it', async () => {
  await deletedMidFlight(6, async (x, db) => {
    const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: x.secretKey });
    const { domain } = await verifiedDomain(x);
    const seg = await api('POST', '/segments', { name: 'Plan p', trackMembership: true, condition: tree('p') });
    const w = await api('POST', '/workflows', { name: 'w', eventName: `segment.${seg.body.slug}.entry` });
    const mail = { subject: 's', body: 'b', from: `n@${domain}` };
    const step = await api('POST', `/workflows/${w.body.id}/steps`, { type: 'SEND_EMAIL', config: mail });
    await api('POST', `/workflows/${w.body.id}/transitions`, {
      fromStepId: w.body.steps[0].id,
      toStepId: step.body.id,
    });
    expect((await api('PATCH', `/workflows/${w.body.id}`, { enabled: true })).status).toBe(200);
    const stamp = Date.now().toString(36);
    await importCsv(
      x,
      ['email,plan', ...Array.from({ length: 4000 }, (_, i) => `wf${i}-${stamp}@example.com,p`)].join('\n'),
    );
    // Thousands enter the segment at once: each starts an execution whose SEND_EMAIL step queues mail.
    expect((await api('POST', `/segments/${seg.body.id}/compute`)).status).toBe(200);
    await eventually(async () => ((await emailsOf(db, x.projectId)) > 0 ? true : undefined));
  });
});
