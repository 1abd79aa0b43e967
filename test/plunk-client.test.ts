import { createRequire } from 'node:module';
import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';

// Plunk's official Node.js library, unchanged, pointed at this platform as its README shows:
// `new Plunk(secretKey, { baseUrl })`. It calls POST <baseUrl>track and POST <baseUrl>send.

interface PlunkClient {
  events: { track(event: { event: string; email: string; data?: Record<string, unknown> }): Promise<unknown> };
  emails: { send(body: Record<string, unknown>): Promise<unknown> };
}
// A CommonJS package whose `exports.default` is the class: loaded as Node loads it for its users.
const Plunk: new (key: string, opts: { baseUrl: string }) => PlunkClient = createRequire(import.meta.url)(
  '@plunk/node',
).default;

let t: Tenant;
let domain: string;
let plunk: PlunkClient;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
  plunk = new Plunk(t.secretKey, { baseUrl: `${platform.gatewayUrl}/v1/` });
});

describe('@plunk/node against this platform', () => {
  test('events.track with the secret key records the event and upserts the contact', async () => {
    const email = uniqueEmail('plunk');
    const answer = await plunk.events.track({ event: 'signed-up', email, data: { plan: 'pro' } });
    expect(answer).toMatchObject({ success: true });
    const contact = await eventually(async () => {
      const found = await call('GET', `/contacts?search=${encodeURIComponent(email)}`, undefined, {
        key: t.secretKey,
      });
      return found.body.data[0];
    });
    expect(contact.data).toMatchObject({ plan: 'pro' });
    const events = await call('GET', `/events/contact/${contact.id}`, undefined, { key: t.secretKey });
    expect(JSON.stringify(events.body)).toContain('signed-up');
  });

  test('emails.send delivers a message; an API error surfaces as the library error', async () => {
    const to = uniqueEmail('plunk-to');
    const answer = await plunk.emails.send({
      to,
      subject: 'Hello from Plunk',
      body: '<p>It works</p>',
      from: `hello@${domain}`,
      name: 'Plunk Test',
    });
    expect(answer).toMatchObject({ success: true });
    const [mail] = await waitForMail(to);
    expect(mail.parsed.subject).toBe('Hello from Plunk');
    expect(mail.parsed.from?.text).toContain('Plunk Test');

    const wrong = new Plunk('sk_not_a_real_key', { baseUrl: `${platform.gatewayUrl}/v1/` });
    await expect(wrong.emails.send({ to, subject: 's', body: 'b' })).rejects.toThrow();
  });
});
