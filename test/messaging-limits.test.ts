import { call, expectEnvelope, newTenant, uniqueEmail, type Answer, type Tenant } from './support/client.js';
import { receivedMail, verifiedDomain, waitForMail } from './support/messaging.js';

// Hostile message content: sizes checked before anything parses, the template rewrite in
// linear time, one render budget per /v1/send, and platform headers no caller can replace.

let t: Tenant;
let domain: string;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
});

const MAX_BODY_BYTES = 512 * 1024;
const from = () => `news@${domain}`;
const send = (body: Record<string, unknown>) =>
  call('POST', '/v1/send', { from: from(), ...body }, { key: t.secretKey });
const createTemplate = (body: Record<string, unknown>) =>
  call(
    'POST',
    '/templates',
    { name: 'limits', from: from(), subject: 'Hi', body: '<p>Hi</p>', ...body },
    { key: t.secretKey },
  );

function expectFieldError(res: Answer, field: string, code: string): void {
  expectEnvelope(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.errors).toEqual([expect.objectContaining({ field, code })]);
}

/** The answer and how long it took. */
async function timed(request: () => Promise<Answer>): Promise<{ res: Answer; ms: number }> {
  const started = Date.now();
  const res = await request();
  return { res, ms: Date.now() - started };
}

describe('message content limits', () => {
  test('a subject over 998 characters or a body over 512 KiB is a 422 too_big on templates and /v1/send', async () => {
    const longSubject = 'x'.repeat(999);
    const bigBody = 'x'.repeat(MAX_BODY_BYTES + 1);
    expectFieldError(await createTemplate({ subject: longSubject }), 'subject', 'too_big');
    expectFieldError(await createTemplate({ body: bigBody }), 'body', 'too_big');
    expectFieldError(await send({ to: uniqueEmail('to'), subject: longSubject, body: 'b' }), 'subject', 'too_big');
    expectFieldError(await send({ to: uniqueEmail('to'), subject: 's', body: bigBody }), 'body', 'too_big');

    // Counted in UTF-8 bytes; a body of exactly the limit is accepted.
    expectFieldError(await createTemplate({ body: 'é'.repeat(MAX_BODY_BYTES / 2 + 1) }), 'body', 'too_big');
    const created = await createTemplate({ body: 'x'.repeat(MAX_BODY_BYTES) });
    expect(created.status).toBe(201);
    expectFieldError(
      await call('PATCH', `/templates/${created.body.id}`, { body: bigBody }, { key: t.secretKey }),
      'body',
      'too_big',
    );
  });

  test('a body of `{{` repeated up to the limit answers promptly (a minute with the quadratic rewrite)', async () => {
    const body = '{{'.repeat(MAX_BODY_BYTES / 2);
    const template = await timed(() => createTemplate({ body }));
    expectFieldError(template.res, 'body', 'template_error');
    const sent = await timed(() => send({ to: uniqueEmail('to'), subject: 's', body }));
    expectFieldError(sent.res, 'body', 'template_error');
    expect(template.ms + sent.ms).toBeLessThan(10_000);
  });

  test('50 recipients whose renders exceed the request budget: 422 render_budget, nothing queued', async () => {
    // About 55 ms of CPU per render here (liquidjs renders synchronously): 100 renders (subject and body of 50
    // recipients) would take 5.5 s, so the 2 s budget runs out on a machine up to about 2.5 times faster, while one
    // render stays inside the 500 ms per-render limit (wall time) unless the process gets under a ninth of a core.
    // Before: 100 x 100 steps (30 ms through the per-node promises of an asynchronous render) took 1.7 s for all
    // 100 renders once rendering became synchronous, inside the budget; 180 x 180 steps (0.1 s) crossed the
    // per-render limit on a box at load 20-30.
    const loop = '{% for i in (1..350) %}{% for j in (1..100) %}{% assign k = j %}{% endfor %}{% endfor %}';
    const to = Array.from({ length: 50 }, () => uniqueEmail('budget'));
    const res = await send({ to, subject: `${loop}Hi`, body: `${loop}<p>Hi {{email}}</p>` });
    expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.errors).toEqual([
      expect.objectContaining({ code: 'render_budget', message: expect.stringContaining('2000 ms') }),
    ]);

    // Nothing of the refused request is delivered: a later mail to its first recipient arrives alone.
    const marker = await send({ to: to[0], subject: 'marker', body: '<p>marker</p>' });
    expect(marker.status).toBe(200);
    const mail = await waitForMail(to[0]);
    expect(mail.map((m) => m.parsed.subject)).toEqual(['marker']);
    expect(await receivedMail(to[1])).toEqual([]);
  });

  test('custom headers that would stand in for platform or trace headers are 422 reserved_header', async () => {
    const names = [
      'X-Email-Id',
      'precedence',
      'Auto-Submitted',
      'Received',
      'Authentication-Results',
      'ARC-Seal',
      'Received-SPF',
      'Return-Path',
    ];
    for (const name of names) {
      expectFieldError(
        await send({ to: uniqueEmail('to'), subject: 's', body: 'b', headers: { [name]: 'forged' } }),
        `headers.${name}`,
        'reserved_header',
      );
    }
  });

  test("a delivered message carries the platform's X-Email-Id once, next to the caller's own headers", async () => {
    const to = uniqueEmail('to');
    const res = await send({ to, subject: 's', body: '<p>b</p>', headers: { 'X-Mailer': 'client 1.0', 'X-Tag': 'a' } });
    expect(res.status).toBe(200);
    const [mail] = await waitForMail(to);
    expect(mail.parsed.headers.get('x-email-id')).toBe(res.body.data.emails[0].email);
    expect(mail.raw.toString('latin1').match(/^x-email-id:/gim)).toHaveLength(1);
    expect(mail.parsed.headers.get('x-mailer')).toBe('client 1.0');
    expect(mail.parsed.headers.get('x-tag')).toBe('a');
  });
});
