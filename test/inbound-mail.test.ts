import nodemailer from 'nodemailer';
import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { uniqueDomain, verifiedDomain, waitForMail } from './support/messaging.js';
import { metricValue } from './support/metrics.js';

// Inbound mail (README "Inbound mail"): real mail sent with nodemailer to the messaging service's SMTP listener
// (INBOUND_SMTP_PORT): the List-Unsubscribe mailto unsubscribes, other mail from a contact is `email.received`.

const inbound = nodemailer.createTransport({
  host: '127.0.0.1',
  port: Number((platform as unknown as { inboundSmtpPort: string }).inboundSmtpPort),
  secure: false,
  ignoreTLS: true,
});
afterAll(() => inbound.close());

const api = (t: Tenant, method: string, path: string, body?: unknown) => call(method, path, body, { key: t.secretKey });
const contactOf = async (t: Tenant, email: string) =>
  (await api(t, 'GET', `/contacts?search=${encodeURIComponent(email)}`)).body.data[0];

/** A tenant with a verified domain and a subscribed contact who got one mail carrying List-Unsubscribe. */
async function mailedContact() {
  const t = await newTenant();
  const { domain } = await verifiedDomain(t);
  const email = uniqueEmail('inbound');
  expect((await api(t, 'POST', '/contacts', { email })).status).toBe(201);
  const sent = await api(t, 'POST', '/v1/send', {
    to: email,
    from: `news@${domain}`,
    subject: 'News',
    body: '<p>news <a href="{{unsubscribeUrl}}">unsubscribe</a></p>',
  });
  expect(sent.status).toBe(200);
  const [mail] = await waitForMail(email);
  // The raw header (mailparser turns List-* headers into objects); it may be folded over lines.
  const header = /^List-Unsubscribe:((?:.*\r?\n[ \t].*)*.*)$/im.exec(mail.raw.toString())?.[1] ?? '';
  const mailto = /<mailto:([^>]+)>/.exec(header.replace(/\r?\n[ \t]+/g, ''))?.[1];
  expect(mailto).toBeDefined();
  const url = new URL(`mailto:${mailto}`);
  return { t, domain, email, address: decodeURIComponent(url.pathname), subject: url.searchParams.get('subject')! };
}

describe('inbound mail', () => {
  test('mail to the advertised unsubscribe@ address, token in the subject, unsubscribes the contact', async () => {
    const { t, domain, email, address, subject } = await mailedContact();
    expect(address).toBe(`unsubscribe@${domain}`);
    expect(subject).toMatch(/^unsubscribe \S+$/);
    expect((await contactOf(t, email)).subscribed).toBe(true);
    await inbound.sendMail({ from: email, to: address, subject, text: 'please stop' });
    await eventually(async () => ((await contactOf(t, email)).subscribed === false ? true : undefined));
    await eventually(async () => {
      const a = await api(t, 'GET', '/activity?type=contact.unsubscribed');
      return a.body.data?.length ? true : undefined;
    });
  });

  test('a forged token or a missing one is refused by the listener and changes nothing', async () => {
    const { t, email, address, subject } = await mailedContact();
    const forged = `${subject.slice(0, -4)}AAAA`;
    await expect(inbound.sendMail({ from: email, to: address, subject: forged, text: 'x' })).rejects.toMatchObject({
      responseCode: 550,
    });
    await expect(inbound.sendMail({ from: email, to: address, subject: 'stop it', text: 'x' })).rejects.toMatchObject({
      responseCode: 550,
    });
    expect((await contactOf(t, email)).subscribed).toBe(true);
  });

  test('other mail from a contact is email.received in activity and events, and starts workflows', async () => {
    const { t, domain, email } = await mailedContact();
    const wf = await api(t, 'POST', '/workflows', { name: 'on reply', eventName: 'email.received' });
    expect(wf.status).toBe(201);
    const exit = await api(t, 'POST', `/workflows/${wf.body.id}/steps`, { type: 'EXIT', name: 'done', config: {} });
    expect(exit.status).toBe(201);
    const edge = { fromStepId: wf.body.steps[0].id, toStepId: exit.body.id };
    expect((await api(t, 'POST', `/workflows/${wf.body.id}/transitions`, edge)).status).toBe(201);
    expect((await api(t, 'PATCH', `/workflows/${wf.body.id}`, { enabled: true })).status).toBe(200);

    await inbound.sendMail({ from: email, to: `hello@${domain}`, subject: 'Re: News', text: 'Thanks, tell me more' });
    const contact = await contactOf(t, email);
    const item = await eventually(async () => {
      const a = await api(t, 'GET', '/activity?type=email.received');
      return a.body.data?.[0];
    });
    expect(item).toMatchObject({ type: 'email.received', contactId: contact.id });
    expect(item.data).toMatchObject({
      from: email,
      subject: 'Re: News',
      text: expect.stringContaining('tell me more'),
    });
    const events = await eventually(async () => {
      const e = await api(t, 'GET', `/events/contact/${contact.id}`);
      const names = (e.body.data ?? []).map((x: { name: string }) => x.name);
      return names.includes('email.received') ? names : undefined;
    });
    expect(events).toContain('email.received');
    await eventually(async () => {
      const x = await api(t, 'GET', `/workflows/${wf.body.id}/executions`);
      return x.body.data?.length === 1 ? true : undefined;
    });
    // Still subscribed: only the unsubscribe@ address unsubscribes.
    expect((await contactOf(t, email)).subscribed).toBe(true);
  });

  test("an auto-reply (RFC 3834) is kept as email.received, starts no workflow; a person's reply does", async () => {
    const { t, domain, email } = await mailedContact();
    const wf = await api(t, 'POST', '/workflows', {
      name: 'on reply',
      eventName: 'email.received',
      allowReentry: true,
    });
    const exit = await api(t, 'POST', `/workflows/${wf.body.id}/steps`, { type: 'EXIT', name: 'done', config: {} });
    const edge = { fromStepId: wf.body.steps[0].id, toStepId: exit.body.id };
    expect((await api(t, 'POST', `/workflows/${wf.body.id}/transitions`, edge)).status).toBe(201);
    expect((await api(t, 'PATCH', `/workflows/${wf.body.id}`, { enabled: true })).status).toBe(200);
    const executions = async () => (await api(t, 'GET', `/workflows/${wf.body.id}/executions`)).body.data;
    const dropped = () => metricValue('workflows', 'workflow_loop_guard_total', { guard: 'automatic_mail' });

    for (const headers of [
      { 'Auto-Submitted': 'auto-replied' },
      { Precedence: 'auto_reply' },
      { 'X-Autoreply': 'yes' },
    ]) {
      const before = await dropped();
      await inbound.sendMail({ from: email, to: `hello@${domain}`, subject: 'Out of office', text: 'away', headers });
      // Handled by the workflows consumer, which started nothing.
      await eventually(async () => ((await dropped()) > before ? true : undefined), 15_000, 'the auto-reply dropped');
      expect(await executions()).toEqual([]);
    }
    const item = await eventually(async () => {
      const a = await api(t, 'GET', '/activity?type=email.received');
      return a.body.data?.length === 3 ? a.body.data[0] : undefined;
    });
    expect(item.data).toMatchObject({
      subject: 'Out of office',
      automatic: expect.stringMatching(/^X-Autoreply: yes/i),
    });

    await inbound.sendMail({ from: email, to: `hello@${domain}`, subject: 'Re: News', text: 'Tell me more' });
    await eventually(async () => ((await executions())?.length === 1 ? true : undefined));
  });

  test('a message MIME parsing refuses (multiparts nested 3,000 deep) is a permanent 554, not a 451', async () => {
    const t = await newTenant();
    const { domain } = await verifiedDomain(t);
    const depth = 3000;
    let raw = `From: ${uniqueEmail('x')}\r\nTo: hello@${domain}\r\nSubject: nested\r\n`;
    for (let i = 0; i < depth; i++) raw += `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`;
    raw += 'Content-Type: text/plain\r\n\r\nhi\r\n';
    for (let i = depth - 1; i >= 0; i--) raw += `--b${i}--\r\n`;
    await expect(
      inbound.sendMail({ envelope: { from: uniqueEmail('x'), to: [`hello@${domain}`] }, raw }),
    ).rejects.toMatchObject({ responseCode: 554 });
  });

  test('mail for a domain no project verified is refused at RCPT TO (no open relay)', async () => {
    const t = await newTenant();
    await expect(
      inbound.sendMail({ from: uniqueEmail('x'), to: `someone@${uniqueDomain('nobody')}`, subject: 'hi', text: 'x' }),
    ).rejects.toMatchObject({ responseCode: 550 });
    const a = await api(t, 'GET', '/activity?type=email.received');
    expect(a.body.data).toEqual([]);
  });
});
