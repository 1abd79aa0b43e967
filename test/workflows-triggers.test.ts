import { randomUUID } from 'node:crypto';
import { connect } from 'nats';
import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { receivedMail, verifiedDomain, waitForMail } from './support/messaging.js';
import { metricValue } from './support/metrics.js';

// Workflows started by email lifecycle messages (emails.<type>) and segment membership changes
// (segments.membership.changed), consumed straight from the bus; a tenant of their own, so the
// email.* workflows see only this file's mail.

let t: Tenant;
let domain: string;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
});

const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: t.secretKey });
const pixelOf = (html: string) => /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1].replace(/&amp;/g, '&');

/** An enabled workflow TRIGGER -> `step` -> EXIT for `eventName`. */
async function workflow(eventName: string, step: { type: string; config: unknown }): Promise<string> {
  const w = await api('POST', '/workflows', { name: `wf ${eventName}`, eventName });
  expect(w.status).toBe(201);
  const s = await api('POST', `/workflows/${w.body.id}/steps`, step);
  const exit = await api('POST', `/workflows/${w.body.id}/steps`, { type: 'EXIT', config: {} });
  for (const [fromStepId, toStepId] of [
    [w.body.steps[0].id, s.body.id],
    [s.body.id, exit.body.id],
  ]) {
    expect((await api('POST', `/workflows/${w.body.id}/transitions`, { fromStepId, toStepId })).status).toBe(201);
  }
  expect((await api('PATCH', `/workflows/${w.body.id}`, { enabled: true })).status).toBe(200);
  return w.body.id;
}

type Execution = { id: string; status: string; contactId: string; context: Record<string, any>; chainDepth: number };

async function executions(workflowId: string): Promise<Execution[]> {
  const r = await api('GET', `/workflows/${workflowId}/executions`);
  expect(r.status).toBe(200);
  return r.body.data;
}

const exited = (workflowId: string, count = 1) =>
  eventually(
    async () => {
      const list = await executions(workflowId);
      return list.filter((e) => e.status === 'EXITED').length >= count ? list : undefined;
    },
    20_000,
    `${count} EXITED execution(s) of ${workflowId}`,
  );

const contactEvents = async (contactId: string): Promise<string[]> =>
  (await api('GET', `/events/contact/${contactId}`)).body.data.map((e: { name: string }) => e.name);

describe('workflow triggers from the bus', () => {
  test('email.open: opening a sent email starts the workflow once, with the email id in the event data', async () => {
    const opened = await workflow('email.open', {
      type: 'UPDATE_CONTACT',
      config: { data: { openedSomething: true } },
    });
    // A marker workflow on a tracked event, to know the bus has moved past the open.
    const marker = await workflow('marker', { type: 'UPDATE_CONTACT', config: { data: { marked: true } } });
    const to = uniqueEmail('wf-open');
    const sent = await call(
      'POST',
      '/v1/send',
      { to, from: `hi@${domain}`, subject: 'Open me', body: '<p>Hello</p>' },
      { key: t.secretKey },
    );
    expect(sent.status).toBe(200);
    const emailId = sent.body.data.emails[0].email as string;
    const [mail] = await waitForMail(to);
    // email.sent arrived on the bus before the open: it starts nothing (no workflow listens to it).
    expect(await executions(opened)).toEqual([]);
    expect((await fetch(pixelOf(String(mail.parsed.html)))).status).toBe(200);

    const [e] = await exited(opened);
    // Straight from messaging's emails.open message (its bus id), not from the event contacts records.
    expect(e.context.event).toMatchObject({ id: expect.stringMatching(/^messaging-/), name: 'email.open' });
    expect(e.context.event.data).toMatchObject({ emailId });
    const contact = await api('GET', `/contacts/${e.contactId}`);
    expect(contact.body.data).toMatchObject({ openedSomething: true });

    // contacts also records the open as an event and publishes it on events.email: that copy starts
    // nothing more. Wait for it to be recorded, then for a later tracked event to be handled.
    await eventually(
      async () => ((await contactEvents(e.contactId)).includes('email.open') ? true : undefined),
      10_000,
      'email.open recorded by contacts',
    );
    expect((await call('POST', '/v1/track', { email: to, event: 'marker' }, { key: t.publicKey })).status).toBe(200);
    await exited(marker);
    expect(await executions(opened)).toHaveLength(1);
  });

  test("email.click: a link scanner's click starts nothing; the person's click starts it, with its url", async () => {
    const clicked = await workflow('email.click', { type: 'UPDATE_CONTACT', config: { data: { clicked: true } } });
    const marker = await workflow('marker-click', { type: 'UPDATE_CONTACT', config: { data: { marked: true } } });
    const to = uniqueEmail('wf-click');
    const body = '<p><a href="https://example.org/a">A</a> <a href="https://example.org/b">B</a></p>';
    const sent = await call(
      'POST',
      '/v1/send',
      { to, from: `hi@${domain}`, subject: 'Click', body },
      {
        key: t.secretKey,
      },
    );
    expect(sent.status).toBe(200);
    const html = String((await waitForMail(to))[0].parsed.html);
    const [a, b] = [...html.matchAll(/href="([^"]+\/t\/c\/[^"]+)"/g)].map((x) => x[1].replace(/&amp;/g, '&'));
    // A mail security scanner follows link A first (README "Tracking", automated hits): redirected, not recorded.
    const scanned = await fetch(a, { headers: { 'user-agent': 'Barracuda Sentinel (EE)' }, redirect: 'manual' });
    expect(scanned.headers.get('location')).toBe('https://example.org/a');
    const chrome =
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    expect((await fetch(b, { headers: { 'user-agent': chrome }, redirect: 'manual' })).status).toBe(302);

    const [e] = await exited(clicked);
    expect(e.context.event).toMatchObject({ name: 'email.click' });
    expect(e.context.event.data).toMatchObject({ url: 'https://example.org/b', isFirstClick: true });
    // The bus has moved past both clicks once a later tracked event is handled: still the one execution.
    expect((await call('POST', '/v1/track', { email: to, event: 'marker-click' }, { key: t.publicKey })).status).toBe(
      200,
    );
    await exited(marker);
    expect(await executions(clicked)).toHaveLength(1);
    expect((await api('PATCH', `/workflows/${clicked}`, { enabled: false })).status).toBe(200);
  });

  test('email.sent: each sent email starts the workflow once (sent mail comes in batches)', async () => {
    const onSent = await workflow('email.sent', { type: 'UPDATE_CONTACT', config: { data: { mailed: true } } });
    const to = [uniqueEmail('wf-sent'), uniqueEmail('wf-sent')];
    const sent = await call(
      'POST',
      '/v1/send',
      { to, from: `hi@${domain}`, subject: 'Sent', body: '<p>Hello</p>' },
      { key: t.secretKey },
    );
    expect(sent.status).toBe(200);
    const emails = sent.body.data.emails as Array<{ email: string; contact: { id: string } }>;
    const mine = new Set(emails.map((e) => e.contact.id));
    const list = await eventually(
      async () => {
        const done = (await executions(onSent)).filter((e) => mine.has(e.contactId) && e.status === 'EXITED');
        return done.length === 2 ? done : undefined;
      },
      20_000,
      'an execution per sent email',
    );
    // Keyed by the deliveries.emails_sent message's bus id and the email's place in it.
    for (const e of list) {
      expect(e.context.event).toMatchObject({ id: expect.stringMatching(/^messaging-\d+\/\d+$/), name: 'email.sent' });
      const emailId = emails.find((x) => x.contact.id === e.contactId)?.email;
      expect(e.context.event.data).toMatchObject({ emailId });
    }
    // No second execution from contacts' copy of the event (events.emails does not reach workflows).
    expect((await executions(onSent)).filter((e) => mine.has(e.contactId))).toHaveLength(2);
    expect((await api('PATCH', `/workflows/${onSent}`, { enabled: false })).status).toBe(200);
  });

  test('mail a workflow sends does not start that workflow again (on email.sent it would mail forever)', async () => {
    const mailer = await api('POST', '/workflows', {
      name: 'mails on sent',
      eventName: 'email.sent',
      allowReentry: true,
    });
    const send = await api('POST', `/workflows/${mailer.body.id}/steps`, {
      type: 'SEND_EMAIL',
      config: { subject: 'Again', body: '<p>again</p>', from: `loop@${domain}` },
    });
    const edge = { fromStepId: mailer.body.steps[0].id, toStepId: send.body.id };
    expect((await api('POST', `/workflows/${mailer.body.id}/transitions`, edge)).status).toBe(201);
    expect((await api('PATCH', `/workflows/${mailer.body.id}`, { enabled: true })).status).toBe(200);
    // Another workflow on email.sent still starts on that mail: the witness that its email.sent came through.
    const witness = await workflow('email.sent', { type: 'UPDATE_CONTACT', config: { data: { sentSeen: true } } });
    const contact = await api('POST', '/contacts', { email: uniqueEmail('wf-loop') });
    expect(contact.status).toBe(201);
    const mine = (list: Execution[]) => list.filter((e) => e.contactId === contact.body.id);
    expect((await api('POST', `/workflows/${mailer.body.id}/executions`, { contactId: contact.body.id })).status).toBe(
      201,
    );
    await eventually(
      async () => (mine(await executions(witness)).some((e) => e.status === 'EXITED') ? true : undefined),
      20_000,
      'the witness started by the mailed email.sent',
    );
    expect(mine(await executions(mailer.body.id))).toHaveLength(1);
    for (const id of [mailer.body.id, witness]) {
      expect((await api('PATCH', `/workflows/${id}`, { enabled: false })).status).toBe(200);
    }
  });

  test("two workflows mailing on each other's email.sent stop at chain depth 5: six emails, then none", async () => {
    const refused = () => metricValue('workflows', 'workflow_loop_guard_total', { guard: 'chain_depth' });
    const before = await refused();
    const mailer = async (subject: string) => {
      const w = await api('POST', '/workflows', { name: subject, eventName: 'email.sent', allowReentry: true });
      const send = await api('POST', `/workflows/${w.body.id}/steps`, {
        type: 'SEND_EMAIL',
        config: { subject, body: `<p>${subject}</p>`, from: `ping@${domain}` },
      });
      const edge = { fromStepId: w.body.steps[0].id, toStepId: send.body.id };
      expect((await api('POST', `/workflows/${w.body.id}/transitions`, edge)).status).toBe(201);
      expect((await api('PATCH', `/workflows/${w.body.id}`, { enabled: true })).status).toBe(200);
      return w.body.id as string;
    };
    const [ping, pong] = [await mailer('Ping'), await mailer('Pong')];
    const to = uniqueEmail('wf-pingpong');
    const contact = await api('POST', '/contacts', { email: to });
    try {
      // Depth 0 (a manual start), then 1 to 5 each started by the other's email.sent; the sixth email starts none.
      expect((await api('POST', `/workflows/${ping}/executions`, { contactId: contact.body.id })).status).toBe(201);
      await eventually(
        async () => ((await refused()) > before ? true : undefined),
        30_000,
        'the enrolment at depth 6 refused',
      );
      // The executions API shows each one's depth: Ping's at 0, 2 and 4, Pong's at 1, 3 and 5.
      const depths = async (id: string) =>
        (await executions(id))
          .filter((e) => e.contactId === contact.body.id)
          .map((e) => e.chainDepth)
          .sort();
      expect(await depths(ping)).toEqual([0, 2, 4]);
      expect(await depths(pong)).toEqual([1, 3, 5]);
      const deep = (await executions(ping)).find((e) => e.contactId === contact.body.id && e.chainDepth === 2)!;
      expect((await api('GET', `/workflows/${ping}/executions/${deep.id}`)).body.chainDepth).toBe(2);
      const mail = await receivedMail(to);
      expect(mail.map((m) => m.parsed.subject)).toEqual(['Ping', 'Pong', 'Ping', 'Pong', 'Ping', 'Pong']);
      // Workflow mail tells auto-responders not to answer (RFC 3834).
      for (const m of mail) expect(m.raw.toString()).toMatch(/^Auto-Submitted: auto-generated\r?$/m);
    } finally {
      for (const id of [ping, pong]) {
        expect((await api('PATCH', `/workflows/${id}`, { enabled: false })).status).toBe(200);
        await api('POST', `/workflows/${id}/executions/cancel-all`);
      }
    }
  });

  test('segment.<slug>.entry: a contact joining a tracked segment starts the workflow', async () => {
    const seg = await api('POST', '/segments', {
      name: `Joiners ${Date.now().toString(36)}`,
      trackMembership: true,
      condition: { logic: 'AND', groups: [{ filters: [{ field: 'event.joined', operator: 'triggered' }] }] },
    });
    expect(seg.status).toBe(201);
    const w = await workflow(`segment.${seg.body.slug}.entry`, {
      type: 'SEND_EMAIL',
      config: { subject: 'Welcome to the segment', body: '<p>in</p>', from: `flows@${domain}` },
    });
    const to = uniqueEmail('wf-seg');
    expect((await call('POST', '/v1/track', { email: to, event: 'joined' }, { key: t.publicKey })).status).toBe(200);

    const [mail] = await waitForMail(to);
    expect(mail.parsed.subject).toBe('Welcome to the segment');
    const [e] = await exited(w);
    expect(e.context.event).toMatchObject({
      id: expect.stringMatching(/^segments-/),
      name: `segment.${seg.body.slug}.entry`,
      data: { segmentId: seg.body.id },
    });
    // The copy contacts records (segment.<slug>.entry on events.tracked) starts no second execution.
    await eventually(
      async () => ((await contactEvents(e.contactId)).includes(`segment.${seg.body.slug}.entry`) ? true : undefined),
      10_000,
      'segment entry recorded by contacts',
    );
    expect(await executions(w)).toHaveLength(1);

    // The segment is not deleted from under the workflow (it would never start again): 409 naming it.
    const inUse = await api('DELETE', `/segments/${seg.body.id}`);
    expect(inUse.status).toBe(409);
    expect(inUse.body.error).toMatchObject({
      code: 'CONFLICT',
      details: { workflows: [{ workflowId: w, name: `wf segment.${seg.body.slug}.entry` }] },
    });
    expect((await api('GET', `/segments/${seg.body.id}`)).status).toBe(200);
    expect((await api('DELETE', `/workflows/${w}`)).status).toBe(204);
    expect((await api('DELETE', `/segments/${seg.body.id}`)).status).toBe(204);
  });

  test('UPDATE_CONTACT data keys __proto__, constructor, prototype are kept and patched as ordinary keys', async () => {
    const data = JSON.parse('{"__proto__": {"tier": "gold"}, "constructor": "c", "prototype": "p"}');
    const id = await workflow('proto-keys', { type: 'UPDATE_CONTACT', config: { data } });
    const saved = (await api('GET', `/workflows/${id}`)).body.steps.find(
      (s: { type: string }) => s.type === 'UPDATE_CONTACT',
    );
    expect(Object.keys(saved.config.data).sort()).toEqual(['__proto__', 'constructor', 'prototype']);
    const tracked = await call(
      'POST',
      '/v1/track',
      { email: uniqueEmail('wf-proto'), event: 'proto-keys' },
      {
        key: t.publicKey,
      },
    );
    expect(tracked.status).toBe(200);
    await exited(id);
    const contact = (await api('GET', `/contacts/${tracked.body.data.contact}`)).body;
    expect(Object.keys(contact.data).sort()).toEqual(['__proto__', 'constructor', 'prototype']);
    expect(JSON.stringify(contact.data.__proto__)).toBe('{"tier":"gold"}');
  });

  test('tracked batches: an event starts once, a copy starts nothing more, a bad event is skipped alone', async () => {
    const id = await workflow('batched', { type: 'UPDATE_CONTACT', config: { data: { batched: true } } });
    // Re-entry allowed: only the event ids keep a copy of the batch from enrolling the contacts again.
    expect((await api('PATCH', `/workflows/${id}`, { allowReentry: true })).status).toBe(200);
    const marker = await workflow('batched-marker', { type: 'UPDATE_CONTACT', config: { data: { marked: true } } });
    const contacts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api('POST', '/contacts', { email: uniqueEmail('wf-batch') });
      expect(res.status).toBe(201);
      contacts.push(res.body.id);
    }
    const [a, b, c] = contacts;
    const createdAt = new Date().toISOString();
    const event = (contactId: string, name: string) => ({
      projectId: t.projectId,
      contactId,
      eventId: randomUUID(),
      name,
      data: { n: 1 },
      createdAt,
    });
    const [first, last] = [event(a, 'batched'), event(c, 'batched')];
    const batch = {
      projectId: t.projectId,
      events: [
        first,
        { ...event(b, 'batched'), contactId: 7 }, // does not read: skipped alone
        'not an event',
        { ...event(b, 'batched'), projectId: randomUUID() }, // of another project than its batch's: skipped
        last,
      ],
    };
    const nc = await connect({ servers: platform.env.NATS_URL });
    const js = nc.jetstream();
    const subject = `${platform.runId}.events.tracked_batch`;
    try {
      await js.publish(subject, JSON.stringify(batch), { msgID: `test-batch-${id}-1` });
      const done = await exited(id, 2);
      expect(done.map((e) => e.contactId).sort()).toEqual([a, c].sort());
      // The same batch again under another message id (as a republished copy): its events keep their ids.
      await js.publish(subject, JSON.stringify(batch), { msgID: `test-batch-${id}-2` });
      await js.publish(subject, JSON.stringify({ projectId: t.projectId, events: [event(a, 'batched-marker')] }), {
        msgID: `test-batch-${id}-3`,
      });
      await exited(marker);
    } finally {
      await nc.drain();
    }
    const list = await executions(id);
    expect(list.map((e) => e.contactId).sort()).toEqual([a, c].sort());
    expect(list.map((e) => e.context.event.id).sort()).toEqual([first.eventId, last.eventId].sort());
  });
});
