import Stripe from 'stripe';
import { call, eventually, expectEnvelope, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { importCsv } from './support/csv.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';

// Billing (README "Billing"): caps per category enforced where the work happens, consumption counted from the
// services' records, and the Stripe adapter (webhooks signed by the test; no STRIPE_SECRET_KEY: the API calls 501).

const base = (t: Tenant, projectId = t.projectId) => `/users/@me/projects/${projectId}`;
const limits = (t: Tenant, body?: unknown, projectId?: string) =>
  call(body === undefined ? 'GET' : 'PUT', `${base(t, projectId)}/billing-limits`, body, { cookie: t.cookie });
const consumption = async (t: Tenant) => {
  const res = await call('GET', `${base(t)}/billing-consumption`, undefined, { cookie: t.cookie });
  expect(res.status).toBe(200);
  return res.body;
};

const stripe = new Stripe('sk_test_never_used_for_network_calls');
const WEBHOOK_SECRET = platform.env.STRIPE_WEBHOOK_SECRET;
const stripeEvent = (type: string, object: Record<string, unknown>) =>
  JSON.stringify({ id: `evt_${Math.random().toString(36).slice(2)}`, object: 'event', type, data: { object } });
const webhook = (payload: string, signature?: string) =>
  call('POST', '/webhooks/incoming/stripe', undefined, {
    raw: payload,
    headers: { 'content-type': 'application/json', ...(signature ? { 'stripe-signature': signature } : {}) },
  });
const signed = (payload: string, secret = WEBHOOK_SECRET) =>
  webhook(payload, stripe.webhooks.generateTestHeaderString({ payload, secret }));

describe('billing limits', () => {
  test('unlimited by default; PUT sets the categories sent, null clears one, the others keep theirs', async () => {
    const t = await newTenant();
    const fresh = await limits(t);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toEqual({ emails: null, contacts: null, events: null });
    expect((await limits(t, { emails: 1000, events: 50 })).body).toEqual({ emails: 1000, contacts: null, events: 50 });
    expect((await limits(t, { contacts: 7, events: null })).body).toEqual({ emails: 1000, contacts: 7, events: null });
    expect((await limits(t)).body).toEqual({ emails: 1000, contacts: 7, events: null });
  });

  test('bad values are refused and change nothing; another user sees a 404; no session is 401', async () => {
    const t = await newTenant();
    await limits(t, { emails: 10 });
    const bad = await limits(t, { emails: 'lots', contacts: -1, events: 1.5, plan: 'pro' });
    expectEnvelope(bad, 422, 'VALIDATION_ERROR');
    expect(bad.body.error.errors.map((e: { field: string }) => e.field).sort()).toEqual([
      'contacts',
      'emails',
      'events',
      'plan',
    ]);
    expectEnvelope(await limits(t, { emails: 1e13 }), 422, 'VALIDATION_ERROR');
    expectEnvelope(await limits(t, [1, 2]), 400, 'BAD_REQUEST');
    expect((await limits(t)).body).toEqual({ emails: 10, contacts: null, events: null });

    const other = await newTenant();
    expectEnvelope(await limits(other, undefined, t.projectId), 404, 'RESOURCE_NOT_FOUND');
    expectEnvelope(await limits(other, { emails: 1 }, t.projectId), 404, 'RESOURCE_NOT_FOUND');
    expectEnvelope(await limits(other, undefined, 'not-a-uuid'), 404, 'RESOURCE_NOT_FOUND');
    const path = `${base(t)}/billing-consumption`;
    expectEnvelope(await call('GET', path, undefined, { cookie: other.cookie }), 404, 'RESOURCE_NOT_FOUND');
    expect((await call('GET', `${base(t)}/billing-limits`)).status).toBe(401);
    expect((await call('GET', `${base(t)}/billing-limits`, undefined, { key: t.secretKey })).status).toBe(401);
    expect((await limits(t)).body).toEqual({ emails: 10, contacts: null, events: null });
  });
});

describe('enforcement and consumption', () => {
  test('the email cap: sends within it go out, the one beyond is 402 with what was used, nothing queued', async () => {
    const t = await newTenant();
    expect((await limits(t, { emails: 3 })).status).toBe(200);
    const { domain } = await verifiedDomain(t);
    const send = (to: string | string[]) =>
      call('POST', '/v1/send', { to, from: `hi@${domain}`, subject: 'Hi', body: '<p>hi</p>' }, { key: t.secretKey });
    const first = uniqueEmail('cap');
    expect((await send([first, uniqueEmail('cap')])).status).toBe(200);
    await waitForMail(first);
    // Two of three used: a request for two more is refused whole.
    const over = await send([uniqueEmail('cap'), uniqueEmail('cap')]);
    expectEnvelope(over, 402, 'BILLING_LIMIT_REACHED');
    expect(over.body.error.details).toMatchObject({ category: 'emails', used: 2, limit: 3, requested: 2 });
    expect(over.body.error.message).toMatch(/2 of 3 used/);
    expect((await send(uniqueEmail('cap'))).status).toBe(200);
    const refused = uniqueEmail('cap');
    const last = await send(refused);
    expectEnvelope(last, 402, 'BILLING_LIMIT_REACHED');
    expect(last.body.error.details).toMatchObject({ used: 3, limit: 3 });
    const emails = await call('GET', '/emails?limit=100', undefined, { key: t.secretKey });
    expect(emails.body.data).toHaveLength(3);
    expect(emails.body.data.map((e: { to: string }) => e.to)).not.toContain(refused);

    const c = await consumption(t);
    expect(c.emails).toEqual({ used: 3, limit: 3, remaining: 0 });
    expect(new Date(c.period.start).getUTCDate()).toBe(1);
    expect(new Date(c.period.end).getTime()).toBeGreaterThan(Date.now());
    expect(c.subscription).toBeNull();

    // Raising the cap lets mail go again (the services cache caps for a few seconds).
    await limits(t, { emails: 10 });
    await eventually(async () => ((await send(uniqueEmail('cap'))).status === 200 ? true : undefined));
  });

  test('a campaign whose audience would cross the email cap is refused before it starts', async () => {
    const t = await newTenant();
    await limits(t, { emails: 2 });
    const { domain } = await verifiedDomain(t);
    for (let i = 0; i < 3; i++) {
      expect((await call('POST', '/contacts', { email: uniqueEmail('aud') }, { key: t.secretKey })).status).toBe(201);
    }
    const draft = await call(
      'POST',
      '/campaigns',
      { name: 'Big', subject: 'News', body: '<p>news</p>', from: `news@${domain}` },
      { key: t.secretKey },
    );
    expect(draft.status).toBe(201);
    const id = draft.body.data.id;
    const refused = await call('POST', `/campaigns/${id}/send`, {}, { key: t.secretKey });
    expectEnvelope(refused, 402, 'BILLING_LIMIT_REACHED');
    expect(refused.body.error.details).toMatchObject({ category: 'emails', used: 0, limit: 2, requested: 3 });
    expect((await call('GET', `/campaigns/${id}`, undefined, { key: t.secretKey })).body.status).toBe('DRAFT');

    await limits(t, { emails: 3 });
    const sent = await eventually(async () => {
      const res = await call('POST', `/campaigns/${id}/send`, {}, { key: t.secretKey });
      return res.status === 200 ? res : undefined;
    });
    expect(sent.status).toBe(200);
    await eventually(async () => ((await consumption(t)).emails.used === 3 ? true : undefined));
  });

  test('the tracked-events cap on /v1/track; the contacts cap on creation and import; updates work', async () => {
    const t = await newTenant();
    await limits(t, { events: 2, contacts: 2 });
    const a = uniqueEmail('ev');
    const track = (email: string, event = 'clicked-buy') =>
      call('POST', '/v1/track', { event, email }, { key: t.publicKey });
    expect((await track(a)).status).toBe(200);
    expect((await track(a)).status).toBe(200);
    const over = await track(a);
    expectEnvelope(over, 402, 'BILLING_LIMIT_REACHED');
    expect(over.body.error.details).toMatchObject({ category: 'events', used: 2, limit: 2 });

    // One contact so far (from /v1/track); one more fits.
    const b = uniqueEmail('ct');
    expect((await call('POST', '/contacts', { email: b }, { key: t.secretKey })).status).toBe(201);
    const third = await call('POST', '/contacts', { email: uniqueEmail('ct') }, { key: t.secretKey });
    expectEnvelope(third, 402, 'BILLING_LIMIT_REACHED');
    expect(third.body.error.details).toMatchObject({ category: 'contacts', used: 2, limit: 2 });
    const update = await call('POST', '/contacts', { email: b, data: { plan: 'pro' } }, { key: t.secretKey });
    expect(update.status).toBe(200);

    const fresh = uniqueEmail('csv');
    const job = await importCsv(t, ['email,plan', `${b},team`, `${fresh},free`].join('\n'));
    expect(job).toMatchObject({ status: 'completed', updated: 1, imported: 0, skipped: 1 });
    expect(job.errors).toEqual([{ row: 3, email: fresh, reason: 'billing_limit' }]);
    const two = [uniqueEmail('csv'), uniqueEmail('csv')];
    const again = await importCsv(t, ['email', ...two].join('\n'));
    expect(again).toMatchObject({ status: 'completed', imported: 0, skipped: 2 });
    expect(again.errors.map((e: { reason: string }) => e.reason)).toEqual(['billing_limit', 'billing_limit']);

    const c = await consumption(t);
    expect(c.contacts).toEqual({ used: 2, limit: 2, remaining: 0 });
    expect(c.events).toEqual({ used: 2, limit: 2, remaining: 0 });
    expect(c.emails).toEqual({ used: 0, limit: null, remaining: null });
  });
});

describe('payment provider (Stripe adapter)', () => {
  test('without STRIPE_SECRET_KEY checkout, portal and invoices answer 501 saying so; membership first', async () => {
    const t = await newTenant();
    for (const [method, path] of [
      ['POST', 'checkout'],
      ['POST', 'billing-portal'],
      ['GET', 'billing-invoices'],
    ]) {
      const res = await call(method, `${base(t)}/${path}`, method === 'POST' ? {} : undefined, { cookie: t.cookie });
      expectEnvelope(res, 501, 'PAYMENT_PROVIDER_NOT_CONFIGURED');
      expect(res.body.error.message).toMatch(/STRIPE_SECRET_KEY/);
      const other = await newTenant();
      const foreign = await call(method, `${base(t)}/${path}`, method === 'POST' ? {} : undefined, {
        cookie: other.cookie,
      });
      expectEnvelope(foreign, 404, 'RESOURCE_NOT_FOUND');
    }
  });

  test('signed webhooks record the subscription; forged, unsigned or stale signatures are 400', async () => {
    const t = await newTenant();
    const customer = `cus_${Math.random().toString(36).slice(2)}`;
    const completed = stripeEvent('checkout.session.completed', {
      id: 'cs_test_1',
      object: 'checkout.session',
      client_reference_id: t.projectId,
      customer,
      subscription: 'sub_1',
      payment_status: 'paid',
    });
    expectEnvelope(await webhook(completed), 400, 'INVALID_SIGNATURE');
    expectEnvelope(await signed(completed, 'whsec_forged_by_someone_else'), 400, 'INVALID_SIGNATURE');
    const stale = stripe.webhooks.generateTestHeaderString({
      payload: completed,
      secret: WEBHOOK_SECRET,
      timestamp: Math.floor(Date.now() / 1000) - 3600,
    });
    expectEnvelope(await webhook(completed, stale), 400, 'INVALID_SIGNATURE');
    // The signature covers the exact bytes: the same event re-serialised differently is refused.
    const good = stripe.webhooks.generateTestHeaderString({ payload: completed, secret: WEBHOOK_SECRET });
    expectEnvelope(await webhook(` ${completed}`, good), 400, 'INVALID_SIGNATURE');
    expect((await consumption(t)).subscription).toBeNull();

    const ok = await webhook(completed, good);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ received: true, processed: 1, ignored: 0 });
    expect((await consumption(t)).subscription).toMatchObject({
      provider: 'stripe',
      status: 'active',
      customerId: customer,
      subscriptionId: 'sub_1',
    });

    const ended = stripeEvent('customer.subscription.deleted', {
      id: 'sub_1',
      object: 'subscription',
      customer,
      status: 'canceled',
      metadata: {},
    });
    expect((await signed(ended)).body).toMatchObject({ processed: 1 });
    expect((await consumption(t)).subscription).toMatchObject({ status: 'canceled', customerId: customer });

    // About no project of this platform, or of no interest: acknowledged so the provider stops retrying.
    const stranger = stripeEvent('customer.subscription.updated', {
      id: 'sub_x',
      customer: 'cus_unknown',
      status: 'active',
    });
    expect((await signed(stranger)).body).toEqual({ received: true, processed: 0, ignored: 1 });
    expect((await signed(stripeEvent('invoice.paid', { id: 'in_1' }))).body).toEqual({
      received: true,
      processed: 0,
      ignored: 0,
    });
    expectEnvelope(await call('POST', '/webhooks/incoming/paypal', {}), 404, 'RESOURCE_NOT_FOUND');
  });
});
