import { connect, StringCodec } from 'nats';
import { call, eventually, expectEnvelope, newTenant, platform, type Tenant } from './support/client.js';

const track = (t: Tenant, body: unknown, headers?: Record<string, string>) =>
  call('POST', '/v1/track', body, { key: t.publicKey, headers });
const contactByEmail = async (t: Tenant, email: string) =>
  (await call('POST', '/contacts/lookup', { emails: [email] }, { key: t.secretKey })).body.found[0];

describe('/v1/track', () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await newTenant();
  });

  test('upserts the contact (new contacts subscribed) and records the event', async () => {
    const res = await track(t, {
      email: 'new@example.com',
      event: 'signed_up',
      data: {
        plan: 'pro',
        coupon: { value: 'X1', persistent: false },
        cart: { items: 2, promo: { value: 'P', persistent: false }, coupon: null },
        gone: null,
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { contact: expect.any(String), event: expect.any(String), timestamp: expect.any(String) },
    });
    const contact = await call('GET', `/contacts/${res.body.data.contact}`, undefined, { key: t.secretKey });
    expect(contact.body).toMatchObject({ email: 'new@example.com', subscribed: true, data: { plan: 'pro' } });
    expect(contact.body.data.coupon).toBeUndefined();
    expect(contact.body.data.cart).toEqual({ items: 2 });
    const events = await call('GET', `/events/contact/${res.body.data.contact}`, undefined, { key: t.secretKey });
    expect(events.body.data[0]).toMatchObject({
      id: res.body.data.event,
      name: 'signed_up',
      // Every value sent, a one-off nested beside persistent ones included; a null (a deletion) at no depth.
      data: { plan: 'pro', coupon: 'X1', cart: { items: 2, promo: 'P' } },
    });
    expect(events.body.data[0].data).toEqual({ plan: 'pro', coupon: 'X1', cart: { items: 2, promo: 'P' } });
  });

  test('omitted subscribed keeps state; false neither resubscribes nor unsubscribes; true resubscribes', async () => {
    const c = await call('POST', '/contacts', { email: 'unsub@example.com', subscribed: false }, { key: t.secretKey });
    await track(t, { email: 'unsub@example.com', event: 'visit' });
    expect((await contactByEmail(t, 'unsub@example.com')).subscribed).toBe(false);
    await track(t, { email: 'unsub@example.com', event: 'visit', subscribed: false });
    expect((await contactByEmail(t, 'unsub@example.com')).subscribed).toBe(false);
    await track(t, { email: 'unsub@example.com', event: 'visit', subscribed: true });
    expect((await contactByEmail(t, 'unsub@example.com')).subscribed).toBe(true);
    await track(t, { email: 'unsub@example.com', event: 'visit', subscribed: false });
    expect((await contactByEmail(t, 'unsub@example.com')).subscribed).toBe(true);
    const fresh = await track(t, { email: 'fresh-unsub@example.com', event: 'visit', subscribed: false });
    expect(
      (await call('GET', `/contacts/${fresh.body.data.contact}`, undefined, { key: t.secretKey })).body.subscribed,
    ).toBe(false);
    expect(c.status).toBe(201);
  });

  test('tracking the same event twice records two events', async () => {
    await track(t, { email: 'twice@example.com', event: 'click' });
    await track(t, { email: 'twice@example.com', event: 'click' });
    const c = await contactByEmail(t, 'twice@example.com');
    const events = await call('GET', `/events/contact/${c.id}`, undefined, { key: t.secretKey });
    expect(events.body.data.filter((e: { name: string }) => e.name === 'click')).toHaveLength(2);
  });

  test.each([
    'email.sent',
    'email.open',
    'contact.subscribed',
    'contact.unsubscribed',
    'segment.vip-users.entry',
    'segment.vip-users.exit',
  ])('reserved event %s is a 422 with field code reserved_event', async (event) => {
    const res = await track(t, { email: 'reserved@example.com', event });
    expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.errors[0]).toMatchObject({ field: 'event', code: 'reserved_event' });
  });

  test('bad input changes nothing', async () => {
    for (const body of [
      { event: 'x' },
      { email: 'bad', event: 'x' },
      { email: 'nothing@example.com' },
      { email: 'nothing@example.com', event: 7 },
      { email: 'nothing@example.com', event: 'x', data: [1] },
    ]) {
      expectEnvelope(await track(t, body), 422, 'VALIDATION_ERROR');
    }
    expect(await contactByEmail(t, 'nothing@example.com')).toBeUndefined();
  });

  test('parallel tracks share commits, each event recorded; one contact per email; a flip recorded once', async () => {
    await call(
      'POST',
      '/contacts',
      { email: 'burst@example.com', subscribed: false, data: { seen: 0 } },
      { key: t.secretKey },
    );
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        track(t, {
          email: i % 2 ? 'burst@example.com' : `burst${i}@example.com`,
          event: 'burst',
          data: { i, [`k${i}`]: true },
          ...(i === 21 ? { subscribed: true } : {}),
        }),
      ),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.body.data.event)).size).toBe(40);
    const burst = answers.filter((_, i) => i % 2).map((a) => a.body.data.contact);
    expect(new Set(burst).size).toBe(1);
    const contact = await call('GET', `/contacts/${burst[0]}`, undefined, { key: t.secretKey });
    expect(contact.body.subscribed).toBe(true);
    for (let i = 1; i < 40; i += 2) expect(contact.body.data[`k${i}`]).toBe(true);
    expect(contact.body.data.seen).toBe(0);
    const events = await call('GET', `/events/contact/${burst[0]}?limit=100`, undefined, { key: t.secretKey });
    expect(events.body.data.filter((e: { name: string }) => e.name === 'burst')).toHaveLength(20);
    expect(events.body.data.filter((e: { name: string }) => e.name === 'contact.subscribed')).toHaveLength(1);
    const fresh = await call('GET', `/contacts/${answers[0].body.data.contact}`, undefined, { key: t.secretKey });
    expect(fresh.body).toMatchObject({ email: 'burst0@example.com', subscribed: true, data: { i: 0, k0: true } });
  });

  test('concurrent tracks of two projects, some invalid: each answered alone, only valid ones written', async () => {
    // The gateway coalesces concurrent tracks into one TrackEvents call: one item's 422 is its own.
    const other = await newTenant();
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        track(i % 3 === 2 ? other : t, {
          email: i % 5 === 4 ? `not-an-email-${i}` : `mixed${i}@example.com`,
          event: i % 7 === 6 ? 'email.sent' : 'mixed',
          data: { i },
        }),
      ),
    );
    for (const [i, a] of answers.entries()) {
      const tenant = i % 3 === 2 ? other : t;
      if (i % 5 === 4) {
        expectEnvelope(a, 422, 'VALIDATION_ERROR');
        expect(a.body.error.errors[0]).toMatchObject({ field: 'email' });
        expect(await contactByEmail(tenant, `not-an-email-${i}`)).toBeUndefined();
      } else if (i % 7 === 6) {
        expectEnvelope(a, 422, 'VALIDATION_ERROR');
        expect(a.body.error.errors[0]).toMatchObject({ field: 'event', code: 'reserved_event' });
        expect(await contactByEmail(tenant, `mixed${i}@example.com`)).toBeUndefined();
      } else {
        expect(a.status).toBe(200);
        expect((await contactByEmail(tenant, `mixed${i}@example.com`))?.id).toBe(a.body.data.contact);
        const c = await call('GET', `/contacts/${a.body.data.contact}`, undefined, { key: tenant.secretKey });
        expect(c.body).toMatchObject({ email: `mixed${i}@example.com`, data: { i } });
        // Each project sees only its own contacts.
        expect(await contactByEmail(tenant === t ? other : t, `mixed${i}@example.com`)).toBeUndefined();
      }
    }
  });

  test('POST /events/track is the dashboard alias with the secret key', async () => {
    const res = await call(
      'POST',
      '/events/track',
      { email: 'alias@example.com', event: 'alias_event' },
      { key: t.secretKey },
    );
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
  });

  test("answers alike whether or not it takes the gateway's lane (a query string goes through Express)", async () => {
    const cases: Array<{ raw?: string; body?: unknown; key?: string }> = [
      { body: { email: 'lane@example.com', event: 'lane' } },
      { raw: '{"email": "lane@example.com",' },
      { raw: '"just a string"' },
      { raw: '\ufeff' },
      { body: { email: 'not-an-email', event: 'lane' } },
      { body: { email: 'lane@example.com', event: 7 } },
      { body: { email: 'lane@example.com', event: 'lane', data: { 'a\u0000': 1 } } },
      { body: { email: 'lane@example.com', event: 'lane', data: JSON.parse(`${'['.repeat(40)}${']'.repeat(40)}`) } },
      { body: { email: 'lane@example.com', event: 'lane' }, key: 'pk_unknown' },
      { body: { email: 'lane@example.com', event: 'lane' }, key: t.secretKey },
    ];
    // Idempotency-Key keeps the first answer and replays it, on either path.
    const idem = { key: t.publicKey, headers: { 'idempotency-key': `lane-${Date.now()}` } };
    const first = await call('POST', '/v1/track', { email: 'lane@example.com', event: 'once' }, idem);
    const again = await call('POST', '/v1/track', { email: 'lane@example.com', event: 'once' }, idem);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const seen = (a: Awaited<ReturnType<typeof call>>) => ({
      status: a.status,
      body: JSON.parse(
        JSON.stringify(a.body).replace(/"(requestId|timestamp|event)":"[^"]*"/g, '"$1":"..."'),
      ) as unknown,
      headers: ['content-type', 'x-ratelimit-limit', 'retry-after'].map((h) => a.headers.get(h)),
      requestId: a.headers.get('x-request-id') !== null,
    });
    for (const c of cases) {
      const opts = { key: c.key ?? t.publicKey, raw: c.raw };
      const lane = await call('POST', '/v1/track', c.body, opts);
      const express = await call('POST', '/v1/track?via=express', c.body, opts);
      expect(seen(lane)).toEqual(seen(express));
    }
  });
});

describe('events endpoints', () => {
  test('list, names, stats, per-contact events, usage and delete by name', async () => {
    const t = await newTenant();
    for (let i = 0; i < 3; i++) await track(t, { email: `e${i}@example.com`, event: 'purchase' });
    await track(t, { email: 'e0@example.com', event: 'login' });
    const list = await call('GET', '/events?limit=2', undefined, { key: t.secretKey });
    expect(list.body.data).toHaveLength(2);
    expect(list.body.hasMore).toBe(true);
    const rest = await call('GET', `/events?limit=10&cursor=${list.body.cursor}`, undefined, { key: t.secretKey });
    expect(rest.body.data).toHaveLength(2);
    expect((await call('GET', '/events/names', undefined, { key: t.secretKey })).body).toEqual(['login', 'purchase']);
    const stats = await call('GET', '/events/stats', undefined, { key: t.secretKey });
    expect(stats.body.total).toBe(4);
    expect(stats.body.events[0]).toMatchObject({ name: 'purchase', count: 3, contacts: 3 });
    expect((await call('GET', '/events/purchase/usage', undefined, { key: t.secretKey })).body).toMatchObject({
      event: 'purchase',
      workflows: [],
    });
    const del = await call('DELETE', '/events/purchase', undefined, { key: t.secretKey });
    expect(del.body.deleted).toBe(3);
    expect((await call('GET', '/events/names', undefined, { key: t.secretKey })).body).toEqual(['login']);
    expectEnvelope(
      await call('GET', '/events/contact/00000000-0000-4000-8000-000000000000', undefined, { key: t.secretKey }),
      404,
      'CONTACT_NOT_FOUND',
    );
    expectEnvelope(await call('GET', '/events?cursor=bogus', undefined, { key: t.secretKey }), 400, 'BAD_REQUEST');
  });
});

describe('the bus', () => {
  test('contact and event messages go out on JetStream', async () => {
    const t = await newTenant();
    const res = await track(t, { email: 'bus@example.com', event: 'bus_event', data: { a: 1 } });
    const nc = await connect({ servers: platform.env.NATS_URL });
    try {
      const jsm = await nc.jetstreamManager();
      const sc = StringCodec();
      const find = async (stream: string, match: (d: any) => boolean) =>
        eventually(
          async () => {
            const info = await jsm.streams.info(`${platform.runId}_${stream}`);
            for (let seq = info.state.last_seq; seq >= Math.max(1, info.state.first_seq); seq--) {
              const m = await jsm.streams.getMessage(`${platform.runId}_${stream}`, { seq }).catch(() => null);
              if (!m) continue;
              const data = JSON.parse(sc.decode(m.data));
              if (match(data)) return { subject: m.subject, data, msgId: m.header?.get('Nats-Msg-Id') };
            }
            return undefined;
          },
          15_000,
          `${stream} message`,
        );
      const event = await find('EVENTS', (d) => d.eventId === res.body.data.event);
      expect(event.subject).toBe(`${platform.runId}.events.tracked`);
      expect(event.data).toMatchObject({
        projectId: t.projectId,
        contactId: res.body.data.contact,
        name: 'bus_event',
        data: { a: 1 },
      });
      expect(event.msgId).toMatch(/^contacts-\d+$/);
      const contact = await find('CONTACTS', (d) => d.contact?.id === res.body.data.contact);
      expect(contact.subject).toBe(`${platform.runId}.contacts.created`);
      expect(contact.data.contact).toMatchObject({ email: 'bus@example.com', subscribed: true, data: { a: 1 } });
    } finally {
      await nc.drain();
    }
  });
});
