import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { call, eventually, expectEnvelope, newTenant, uniqueEmail, type Tenant } from './support/client.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';
import { buildWorkflow, uniqueEvent, type WorkflowSpec } from './support/workflows.js';

let t: Tenant;
let domain: string;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
});

const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: t.secretKey });
const track = (email: string, event: string, data?: Record<string, unknown>) =>
  call('POST', '/v1/track', { email, event, data }, { key: t.publicKey });

/** A workflow of this file's tenant (support/workflows.ts). */
const build = (...spec: WorkflowSpec) => buildWorkflow(t, ...spec);

const send = (subject: string) => ({
  type: 'SEND_EMAIL',
  config: { subject, body: `<p>${subject} {{plan ?? "none"}}</p>`, from: `flows@${domain}` },
});

async function executions(workflowId: string, status?: string) {
  const r = await api('GET', `/workflows/${workflowId}/executions${status ? `?status=${status}` : ''}`);
  expect(r.status).toBe(200);
  return r.body.data as { id: string; status: string; contactId: string; error?: string }[];
}

/** The only execution of a workflow once it has reached one of `statuses`. */
async function settled(workflowId: string, statuses = ['COMPLETED', 'EXITED', 'FAILED'], timeoutMs = 15_000) {
  return eventually(
    async () => {
      const list = await executions(workflowId);
      return list.length === 1 && statuses.includes(list[0].status) ? list[0] : undefined;
    },
    timeoutMs,
    `execution in ${statuses.join('|')}`,
  );
}

const stepStatuses = async (workflowId: string, executionId: string) => {
  const r = await api('GET', `/workflows/${workflowId}/executions/${executionId}`);
  expect(r.status).toBe(200);
  return r.body.steps as { stepId: string; stepType: string; status: string; output?: any; error?: string }[];
};

describe('workflows API', () => {
  test('create answers triggerType EVENT, disabled, with its TRIGGER step; list and get show it', async () => {
    const name = uniqueEvent('signup');
    const w = await api('POST', '/workflows', { name: 'Welcome', description: 'd', eventName: name });
    expect(w.status).toBe(201);
    expect(w.body).toMatchObject({
      name: 'Welcome',
      description: 'd',
      triggerType: 'EVENT',
      triggerConfig: { eventName: name },
      enabled: false,
      allowReentry: false,
      steps: [{ type: 'TRIGGER' }],
      transitions: [],
    });
    const got = await api('GET', `/workflows/${w.body.id}`);
    expect(got.body.id).toBe(w.body.id);
    // As in PATCH and the API document: a null description is no description.
    const bare = await api('POST', '/workflows', { name: 'Bare', description: null, eventName: name });
    expect(bare.status).toBe(201);
    expect(bare.body.description).toBeUndefined();
    const list = await api('GET', '/workflows?pageSize=100');
    expect(list.body.data.map((x: { id: string }) => x.id)).toContain(w.body.id);
    expect(list.body).toMatchObject({ page: 1, pageSize: 100 });
  });

  test('bad input is 4xx and changes nothing: body, step config, transition labels, unknown ids', async () => {
    expectEnvelope(await api('POST', '/workflows', { name: 'x' }), 422, 'VALIDATION_ERROR');
    expectEnvelope(await api('POST', '/workflows', { name: 'x', eventName: 'e', bogus: 1 }), 422, 'VALIDATION_ERROR');
    const w = await build(uniqueEvent('bad'), { wait: { type: 'DELAY', config: { amount: 1, unit: 'seconds' } } }, [], {
      enable: false,
    });
    const bad = await api('POST', `/workflows/${w.id}/steps`, { type: 'DELAY', config: { amount: -1, unit: 'weeks' } });
    expectEnvelope(bad, 422, 'VALIDATION_ERROR');
    expect(bad.body.error.errors.map((e: { field: string }) => e.field)).toEqual(
      expect.arrayContaining(['config.amount', 'config.unit']),
    );
    expectEnvelope(
      await api('POST', `/workflows/${w.id}/steps`, { type: 'TRIGGER', config: {} }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await api('POST', `/workflows/${w.id}/steps`, { type: 'SEND_EMAIL', config: { subject: 'only' } }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await api('POST', `/workflows/${w.id}/steps`, {
        type: 'CONDITION',
        config: { condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.x', operator: 'sounds' }] }] } },
      }),
      422,
      'VALIDATION_ERROR',
    );
    const cond = await api('POST', `/workflows/${w.id}/steps`, {
      type: 'CONDITION',
      config: { condition: { groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } },
    });
    expect(cond.status).toBe(201);
    const noBranch = await api('POST', `/workflows/${w.id}/transitions`, {
      fromStepId: cond.body.id,
      toStepId: w.steps.wait,
    });
    expectEnvelope(noBranch, 422, 'VALIDATION_ERROR');
    expectEnvelope(
      await api('POST', `/workflows/${w.id}/transitions`, { fromStepId: w.trigger, toStepId: w.trigger }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(await api('GET', '/workflows/00000000-0000-4000-8000-000000000000'), 404, 'WORKFLOW_NOT_FOUND');
    expectEnvelope(await api('GET', '/workflows/not-a-uuid'), 404, 'WORKFLOW_NOT_FOUND');
    // Header injection: a subject or sender name with a line break, a webhook header name or value with one.
    const mail = { subject: 'Hi', body: '<p>x</p>', from: 'team@example.com' };
    for (const config of [
      { ...mail, subject: 'Hi\r\nBcc: someone@example.com' },
      { ...mail, fromName: 'Team\r\nBcc: someone@example.com' },
    ]) {
      expectEnvelope(
        await api('POST', `/workflows/${w.id}/steps`, { type: 'SEND_EMAIL', config }),
        422,
        'VALIDATION_ERROR',
      );
    }
    // Data the contacts service would refuse on every run (keys over 255 characters, over 64 KiB).
    for (const data of [{ ['k'.repeat(256)]: 1 }, { big: 'x'.repeat(65536) }]) {
      const r = await api('POST', `/workflows/${w.id}/steps`, { type: 'UPDATE_CONTACT', config: { data } });
      expectEnvelope(r, 422, 'VALIDATION_ERROR');
      expect(r.body.error.errors[0]).toMatchObject({ field: 'config.data', code: 'too_big' });
    }
    // A webhook body's Liquid never reads the workflows process's files (package.json sits in its directory).
    for (const body of [{ leak: "{% include 'package.json' %}" }, ["{% render 'package.json' %}"], '{{ x | nope }}']) {
      const r = await api('POST', `/workflows/${w.id}/steps`, {
        type: 'WEBHOOK',
        config: { url: 'https://x.example', body },
      });
      expectEnvelope(r, 422, 'VALIDATION_ERROR');
      expect(r.body.error.errors[0]).toMatchObject({ code: 'invalid_template' });
    }
    for (const headers of [{ 'X-A\r\nX-B': 'v' }, { 'X-A': 'v\r\nX-Injected: 1' }, { Host: 'internal.example' }]) {
      const config = { url: 'https://hooks.example.com/x', headers };
      expectEnvelope(
        await api('POST', `/workflows/${w.id}/steps`, { type: 'WEBHOOK', config }),
        422,
        'VALIDATION_ERROR',
      );
    }
    const after = await api('GET', `/workflows/${w.id}`);
    expect(after.body.steps).toHaveLength(3);
    expect(after.body.transitions).toHaveLength(0);
    // Another project cannot see it.
    const other = await newTenant();
    expect((await call('GET', `/workflows/${w.id}`, undefined, { key: other.secretKey })).status).toBe(404);
  });

  test("SEND_EMAIL is checked when saved: the project's template, content that parses, a verified sender", async () => {
    const template = (tenant: Tenant, from: string) =>
      call('POST', '/templates', { name: 'wf', subject: 'Hi', body: '<p>Hi</p>', from }, { key: tenant.secretKey });
    const other = await newTenant();
    const theirs = await template(other, `flows@${(await verifiedDomain(other)).domain}`);
    const ours = await template(t, `flows@${domain}`);
    expect([theirs.status, ours.status]).toEqual([201, 201]);
    const w = await build(uniqueEvent('tpl'), {}, [], { enable: false });
    for (const templateId of [theirs.body.id, '00000000-0000-4000-8000-000000000000']) {
      const r = await api('POST', `/workflows/${w.id}/steps`, { type: 'SEND_EMAIL', config: { templateId } });
      expectEnvelope(r, 422, 'VALIDATION_ERROR');
      expect(r.body.error.errors).toEqual([expect.objectContaining({ field: 'config.templateId' })]);
    }
    // Checked as a campaign's content is: the subject and body parse, the sender's domain is verified.
    const content = { subject: 'Hi', body: '<p>Hi</p>', from: `flows@${domain}` };
    const broken = await api('POST', `/workflows/${w.id}/steps`, {
      type: 'SEND_EMAIL',
      config: { ...content, subject: 'Hi {{ first', body: '{% if %}' },
    });
    expectEnvelope(broken, 422, 'VALIDATION_ERROR');
    expect(broken.body.error.errors.map((e: { field: string }) => e.field)).toEqual(['config.subject', 'config.body']);
    for (const config of [
      { ...content, from: 'flows@not-verified.example' },
      { templateId: ours.body.id, from: { name: 'Flows', email: 'flows@not-verified.example' } },
    ]) {
      const r = await api('POST', `/workflows/${w.id}/steps`, { type: 'SEND_EMAIL', config });
      expectEnvelope(r, 403, 'INTERNAL_SERVER_ERROR');
      expect(r.body.error.details).toMatchObject({ reason: 'domain_not_verified', domain: 'not-verified.example' });
    }
    const step = await api('POST', `/workflows/${w.id}/steps`, {
      type: 'SEND_EMAIL',
      config: { templateId: ours.body.id },
    });
    expect(step.status).toBe(201);
    const patch = await api('PATCH', `/workflows/${w.id}/steps/${step.body.id}`, {
      config: { templateId: theirs.body.id },
    });
    expectEnvelope(patch, 422, 'VALIDATION_ERROR');
    const after = await api('GET', `/workflows/${w.id}`);
    expect(after.body.steps.map((s: { config: { templateId?: string } }) => s.config.templateId)).toEqual([
      undefined,
      ours.body.id,
    ]);
    // The template the step sends is not deleted from under it (409 naming the step), until the step goes.
    const inUse = await api('DELETE', `/templates/${ours.body.id}`);
    expectEnvelope(inUse, 409, 'CONFLICT');
    expect(inUse.body.error.details).toEqual({ workflows: [{ workflowId: w.id, stepId: step.body.id }] });
    expect((await api('GET', `/templates/${ours.body.id}`)).status).toBe(200);
    expect((await api('DELETE', `/workflows/${w.id}/steps/${step.body.id}`)).status).toBe(204);
    expect((await api('DELETE', `/templates/${ours.body.id}`)).status).toBe(204);
  });

  test('enabling refuses graphs that cannot run, with a 422 naming the step', async () => {
    const unreachable = await build(uniqueEvent('g1'), { a: send('a'), lost: { type: 'EXIT' } }, [['trigger', 'a']], {
      enable: false,
    });
    let r = await api('PATCH', `/workflows/${unreachable.id}`, { enabled: true });
    expectEnvelope(r, 422, 'VALIDATION_ERROR');
    expect(r.body.error.message).toContain('"lost"');
    expect(r.body.error.message).toContain('not reachable');

    const cond = {
      type: 'CONDITION',
      config: { condition: { groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: true }] }] } },
    };
    const oneBranch = await build(
      uniqueEvent('g2'),
      { check: cond, a: send('a') },
      [
        ['trigger', 'check'],
        ['check', 'a', { branch: 'yes' }],
      ],
      { enable: false },
    );
    r = await api('PATCH', `/workflows/${oneBranch.id}`, { enabled: true });
    expectEnvelope(r, 422, 'VALIDATION_ERROR');
    expect(r.body.error.message).toContain('"check"');

    const loop = await build(
      uniqueEvent('g3'),
      { a: send('a'), b: send('b') },
      [
        ['trigger', 'a'],
        ['a', 'b'],
        ['b', 'a'],
      ],
      { enable: false },
    );
    r = await api('PATCH', `/workflows/${loop.id}`, { enabled: true });
    expectEnvelope(r, 422, 'VALIDATION_ERROR');
    expect(r.body.error.message).toContain('cycle');
    expect((await api('GET', `/workflows/${loop.id}`)).body.enabled).toBe(false);

    const empty = await build(uniqueEvent('g4'), {}, [], { enable: false });
    expectEnvelope(await api('PATCH', `/workflows/${empty.id}`, { enabled: true }), 422, 'VALIDATION_ERROR');
  });

  test('an enabled workflow cannot be edited into a cycle without a wait (a transition, or a splice)', async () => {
    const update = { type: 'UPDATE_CONTACT', config: { data: { seen: true } } };
    const w = await build(
      uniqueEvent('g5'),
      { u: update, pause: { type: 'DELAY', config: { amount: 1, unit: 'hours' } }, v: update },
      [
        ['trigger', 'u'],
        ['u', 'pause'],
        ['pause', 'v'],
        ['v', 'u'],
      ],
    );
    // A step may be added while enabled (unreachable until connected); a transition looping on it may not.
    const extra = await api('POST', `/workflows/${w.id}/steps`, update);
    expect(extra.status).toBe(201);
    // Each would make every execution run its UPDATE_CONTACT steps without end.
    const loop = await api('POST', `/workflows/${w.id}/transitions`, {
      fromStepId: extra.body.id,
      toStepId: extra.body.id,
    });
    expectEnvelope(loop, 422, 'VALIDATION_ERROR');
    expect(loop.body.error.message).toContain('cycle');
    const splice = await api('DELETE', `/workflows/${w.id}/steps/${w.steps.pause}?splice=true`);
    expectEnvelope(splice, 422, 'VALIDATION_ERROR');
    const after = await api('GET', `/workflows/${w.id}`);
    expect([after.body.steps.length, after.body.transitions.length, after.body.enabled]).toEqual([5, 4, true]);
    // Disabled, the graph may pass through such a state while it is edited (enabling checks it again).
    expect((await api('PATCH', `/workflows/${w.id}`, { enabled: false })).status).toBe(200);
    expect((await api('DELETE', `/workflows/${w.id}/steps/${w.steps.pause}?splice=true`)).status).toBe(204);
    expectEnvelope(await api('PATCH', `/workflows/${w.id}`, { enabled: true }), 422, 'VALIDATION_ERROR');
  });

  test("a cycle that sends and waits only for its own mail's email.sent is refused (enable, edit)", async () => {
    const wait = (eventName: string) => ({
      type: 'WAIT_FOR_EVENT',
      config: { eventName, timeout: { amount: 1, unit: 'days' } },
    });
    const edges: [string, string, Record<string, string>?][] = [
      ['trigger', 'mail'],
      ['mail', 'wait'],
      ['wait', 'mail', { waitOutcome: 'EVENT' }],
      ['wait', 'done', { waitOutcome: 'TIMEOUT' }],
    ];
    const loop = await build(
      uniqueEvent('g6'),
      { mail: send('again'), wait: wait('email.sent'), done: { type: 'EXIT' } },
      edges,
      {
        enable: false,
      },
    );
    const r = await api('PATCH', `/workflows/${loop.id}`, { enabled: true });
    expectEnvelope(r, 422, 'VALIDATION_ERROR');
    expect(r.body.error.details).toMatchObject({ stepId: loop.steps.mail, stepType: 'SEND_EMAIL' });
    expect(r.body.error.message).toContain('email.sent');
    // Waiting for a click is a real wait; an enabled one cannot then be turned into a wait for email.sent.
    const clicks = await build(
      uniqueEvent('g7'),
      { mail: send('again'), wait: wait('email.click'), done: { type: 'EXIT' } },
      edges,
    );
    const edit = await api('PATCH', `/workflows/${clicks.id}/steps/${clicks.steps.wait}`, {
      config: { eventName: 'email.sent', timeout: { amount: 1, unit: 'days' } },
    });
    expectEnvelope(edit, 422, 'VALIDATION_ERROR');
    const after = await api('GET', `/workflows/${clicks.id}`);
    const w = after.body.steps.find((x: { id: string }) => x.id === clicks.steps.wait);
    expect(w.config.eventName).toBe('email.click');
  });
});

describe('workflow engine', () => {
  test('a tracked event starts the workflow once and the SEND_EMAIL step delivers the mail', async () => {
    const ev = uniqueEvent('purchase');
    const w = await build(ev, { mail: send('Thanks'), done: { type: 'EXIT' } }, [
      ['trigger', 'mail'],
      ['mail', 'done'],
    ]);
    const to = uniqueEmail('wf');
    expect((await track(to, ev, { plan: 'gold' })).status).toBe(200);
    const [mail] = await waitForMail(to);
    expect(mail.parsed.subject).toBe('Thanks');
    expect(mail.parsed.html).toContain('Thanks gold');
    const e = await settled(w.id, ['EXITED']);
    const steps = await stepStatuses(w.id, e.id);
    expect(steps.map((s) => [s.stepType, s.status])).toEqual([
      ['TRIGGER', 'COMPLETED'],
      ['SEND_EMAIL', 'COMPLETED'],
      ['EXIT', 'COMPLETED'],
    ]);
    expect(steps[1].output).toMatchObject({ status: 'queued', emailId: expect.any(String) });
  });

  test('CONDITION routes yes and no by contact data and by event data', async () => {
    const ev = uniqueEvent('cond');
    const condition = {
      logic: 'OR',
      groups: [
        { filters: [{ field: 'data.tier', operator: 'equals', value: 'vip' }] },
        { filters: [{ field: 'event.data.amount', operator: 'greaterThan', value: 100 }] },
      ],
    };
    const w = await build(
      ev,
      { check: { type: 'CONDITION', config: { condition } }, yes: send('YES'), no: send('NO') },
      [
        ['trigger', 'check'],
        ['check', 'yes', { branch: 'yes' }],
        ['check', 'no', { condition: { branch: 'no' } } as never],
      ],
      { allowReentry: true },
    );
    const vip = uniqueEmail('vip');
    const big = uniqueEmail('big');
    const small = uniqueEmail('small');
    await track(vip, ev, { tier: 'vip', amount: 1 });
    await track(big, ev, { amount: 500 });
    await track(small, ev, { amount: 5 });
    expect((await waitForMail(vip))[0].parsed.subject).toBe('YES');
    expect((await waitForMail(big))[0].parsed.subject).toBe('YES');
    expect((await waitForMail(small))[0].parsed.subject).toBe('NO');
    void w;
  });

  test('DELAY waits its time, then the next step runs', async () => {
    const ev = uniqueEvent('delay');
    const w = await build(
      ev,
      { wait: { type: 'DELAY', config: { amount: 2, unit: 'seconds' } }, mail: send('Later') },
      [
        ['trigger', 'wait'],
        ['wait', 'mail'],
      ],
    );
    const to = uniqueEmail('delay');
    const started = Date.now();
    await track(to, ev);
    const waiting = await settled(w.id, ['WAITING']);
    expect(waiting).toMatchObject({ status: 'WAITING' });
    await waitForMail(to);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    await settled(w.id, ['COMPLETED']);
  });

  test('WAIT_FOR_EVENT resumes on the awaited event of that contact, or follows TIMEOUT', async () => {
    const ev = uniqueEvent('cart');
    const paid = uniqueEvent('paid');
    const w = await build(
      ev,
      {
        wait: { type: 'WAIT_FOR_EVENT', config: { eventName: paid, timeout: { amount: 3, unit: 'seconds' } } },
        thanks: send('Paid {{context.ref}}'),
        nudge: send('Reminder'),
      },
      [
        ['trigger', 'wait'],
        ['wait', 'thanks', { waitOutcome: 'EVENT' }],
        ['wait', 'nudge', { waitOutcome: 'TIMEOUT' }],
      ],
      { allowReentry: true },
    );
    const payer = uniqueEmail('payer');
    const idle = uniqueEmail('idle');
    await track(payer, ev);
    await track(idle, ev);
    await eventually(async () => ((await executions(w.id, 'WAITING')).length === 2 ? true : undefined));
    await track(uniqueEmail('someone-else'), paid); // another contact's event resumes nothing
    await track(payer, paid, { ref: 'R1' });
    expect((await waitForMail(payer))[0].parsed.subject).toBe('Paid R1');
    expect((await waitForMail(idle))[0].parsed.subject).toBe('Reminder');
    const list = await executions(w.id);
    const done = await eventually(async () => {
      const l = await executions(w.id);
      return l.filter((e) => e.status === 'COMPLETED').length === 2 ? l : undefined;
    });
    expect(done).toHaveLength(2);
    void list;
  });

  test('UPDATE_CONTACT patches data and unsubscribes', async () => {
    const ev = uniqueEvent('upd');
    const w = await build(
      ev,
      { upd: { type: 'UPDATE_CONTACT', config: { data: { stage: 'onboarded' }, subscribed: false } } },
      [['trigger', 'upd']],
    );
    const to = uniqueEmail('upd');
    const tracked = await track(to, ev, { keep: 'me' });
    await settled(w.id, ['COMPLETED']);
    const c = await api('GET', `/contacts/${tracked.body.data?.contact ?? ''}`);
    const contact =
      c.status === 200 ? c.body : (await api('GET', `/contacts?search=${encodeURIComponent(to)}`)).body.data?.[0];
    const byId = await api('GET', `/contacts/${contact.id}`);
    expect(byId.body).toMatchObject({ subscribed: false, data: { stage: 'onboarded', keep: 'me' } });
  });

  test('manual start, re-entry rules, cancel one and cancel-all; structural edits refused while active', async () => {
    const w = await build(uniqueEvent('manual'), { wait: { type: 'DELAY', config: { amount: 1, unit: 'hours' } } }, [
      ['trigger', 'wait'],
    ]);
    const a = uniqueEmail('ma');
    const b = uniqueEmail('mb');
    for (const email of [a, b]) await call('POST', '/contacts', { email }, { key: t.secretKey });
    const first = await api('POST', `/workflows/${w.id}/executions`, { email: a, context: { source: 'test' } });
    expect(first.status).toBe(201);
    expect(first.body.context).toEqual({ source: 'test' });
    expectEnvelope(await api('POST', `/workflows/${w.id}/executions`, { email: a }), 409, 'CONFLICT');
    expectEnvelope(
      await api('POST', `/workflows/${w.id}/executions`, { email: 'nobody-here@example.com' }),
      404,
      'CONTACT_NOT_FOUND',
    );
    expectEnvelope(await api('POST', `/workflows/${w.id}/executions`, {}), 422, 'VALIDATION_ERROR');
    await api('POST', `/workflows/${w.id}/executions`, { email: b });
    await eventually(async () => ((await executions(w.id, 'WAITING')).length === 2 ? true : undefined));
    const waiting = await api('GET', `/workflows/${w.id}/executions/${first.body.id}`);
    expect(new Date(waiting.body.dueAt).getTime()).toBeGreaterThan(Date.now() + 3_000_000);

    expectEnvelope(await api('POST', `/workflows/${w.id}/steps`, { type: 'EXIT', config: {} }), 409, 'CONFLICT');
    expectEnvelope(await api('DELETE', `/workflows/${w.id}`), 409, 'CONFLICT');

    const cancelled = await api('DELETE', `/workflows/${w.id}/executions/${first.body.id}`);
    expect([cancelled.status, cancelled.body.status]).toEqual([200, 'CANCELLED']);
    expectEnvelope(await api('DELETE', `/workflows/${w.id}/executions/${first.body.id}`), 409, 'CONFLICT');
    // Without allowReentry a contact that ever had an execution is not enrolled again.
    expectEnvelope(await api('POST', `/workflows/${w.id}/executions`, { email: a }), 409, 'CONFLICT');
    const all = await api('POST', `/workflows/${w.id}/executions/cancel-all`);
    expect(all.body).toEqual({ cancelled: 1 });
    expect((await executions(w.id, 'CANCELLED')).length).toBe(2);
    const exit = await api('POST', `/workflows/${w.id}/steps`, { type: 'EXIT', config: {} });
    expect(exit.status).toBe(201);
    await api('POST', `/workflows/${w.id}/transitions`, { fromStepId: w.steps.wait, toStepId: exit.body.id });

    // With allowReentry: again once nothing is active.
    await api('PATCH', `/workflows/${w.id}`, { allowReentry: true });
    expect((await api('POST', `/workflows/${w.id}/executions`, { email: a })).status).toBe(201);
    expectEnvelope(await api('POST', `/workflows/${w.id}/executions`, { email: a }), 409, 'CONFLICT');
    await api('POST', `/workflows/${w.id}/executions/cancel-all`);
    expect((await api('DELETE', `/workflows/${w.id}`)).status).toBe(204);
  });
});

describe('WEBHOOK step', () => {
  let server: Server;
  let url: string;
  const received: { headers: IncomingMessage['headers']; raw: string[]; body: string; path: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ headers: req.headers, raw: req.rawHeaders, body, path: req.url ?? '' });
        res.statusCode = req.url?.startsWith('/fail') ? 500 : 200;
        // A receiver may answer anything: NUL, or an emoji cut in half where the kept answer ends (1000 chars).
        res.end(req.url?.startsWith('/odd') ? `ok\u0000${'x'.repeat(996)}\u{1F600}` : 'ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  test('posts the documented payload signed with the project secret (HMAC-SHA256 over timestamp.body)', async () => {
    const ev = uniqueEvent('hook');
    const w = await build(
      ev,
      {
        hook: {
          type: 'WEBHOOK',
          config: {
            url: `${url}/ok`,
            headers: { 'X-Team': 'growth' },
            body: { greeting: 'Hi {{contact.email}}', plan: '{{event.data.plan}}' },
          },
        },
      },
      [['trigger', 'hook']],
    );
    const to = uniqueEmail('hook');
    await track(to, ev, { plan: 'pro' });
    const e = await settled(w.id, ['COMPLETED']);
    const got = received.find((r) => r.path === '/ok' && r.body.includes(e.id))!;
    expect(got).toBeDefined();
    const secret = (await api('GET', '/workflows/webhook-secret')).body.secret;
    const ts = String(got.headers['x-webhook-timestamp']);
    const expected = `v1=${createHmac('sha256', secret).update(`${ts}.${got.body}`).digest('hex')}`;
    expect(got.headers['x-webhook-signature']).toBe(expected);
    expect(got.headers['x-team']).toBe('growth');
    const payload = JSON.parse(got.body);
    expect(payload).toMatchObject({
      type: 'workflow.webhook',
      workflow: { id: w.id },
      execution: { id: e.id },
      step: { id: w.steps.hook, name: 'hook' },
      contact: { email: to },
      event: { name: ev, data: { plan: 'pro' } },
      data: { greeting: `Hi ${to}`, plan: 'pro' },
    });
  });

  test('a header named __proto__ is saved and sent like any other (zod records dropped it)', async () => {
    const ev = uniqueEvent('hookproto');
    const headers = JSON.parse('{"__proto__": "p", "X-Team": "growth"}');
    const w = await build(ev, { hook: { type: 'WEBHOOK', config: { url: `${url}/proto`, headers } } }, [
      ['trigger', 'hook'],
    ]);
    const saved = (await api('GET', `/workflows/${w.id}`)).body.steps.find(
      (s: { type: string }) => s.type === 'WEBHOOK',
    );
    expect(Object.keys(saved.config.headers).sort()).toEqual(['X-Team', '__proto__']);
    await track(uniqueEmail('hookproto'), ev);
    const e = await settled(w.id, ['COMPLETED']);
    const got = received.find((r) => r.path === '/proto' && r.body.includes(e.id))!;
    const raw = got.raw.map((h, i) => (i % 2 ? '' : `${h.toLowerCase()}: ${got.raw[i + 1]}`)).filter(Boolean);
    expect(raw).toEqual(expect.arrayContaining(['__proto__: p', 'x-team: growth']));
  });

  test('an answer the database cannot store as is (NUL, half a surrogate pair) still completes the step', async () => {
    const ev = uniqueEvent('hookodd');
    const w = await build(ev, { hook: { type: 'WEBHOOK', config: { url: `${url}/odd` } } }, [['trigger', 'hook']]);
    await track(uniqueEmail('hookodd'), ev);
    const e = await settled(w.id, ['COMPLETED']);
    const steps = await stepStatuses(w.id, e.id);
    expect(steps[1]).toMatchObject({ stepType: 'WEBHOOK', status: 'COMPLETED', output: { attempts: 1, status: 200 } });
    expect(steps[1].output.response).toBe(`ok\ufffd${'x'.repeat(996)}\ufffd`);
    expect(received.filter((r) => r.path === '/odd' && r.body.includes(e.id))).toHaveLength(1);
  });

  test('a receiver that keeps failing fails the step and the execution after the retries', async () => {
    const ev = uniqueEvent('hookfail');
    const w = await build(ev, { hook: { type: 'WEBHOOK', config: { url: `${url}/fail` } } }, [['trigger', 'hook']]);
    await track(uniqueEmail('hookfail'), ev);
    const e = await settled(w.id, ['FAILED']);
    expect(e.error).toContain('500');
    const steps = await stepStatuses(w.id, e.id);
    expect(steps[1]).toMatchObject({ stepType: 'WEBHOOK', status: 'FAILED', output: { attempts: 3, status: 500 } });
    expect(received.filter((r) => r.path === '/fail' && r.body.includes(e.id))).toHaveLength(3);
  });
});
