import { call, expectEnvelope, newTenant, type Tenant } from './support/client.js';

const post = (t: Tenant, body: unknown) => call('POST', '/contacts', body, { key: t.secretKey });

describe('contacts', () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await newTenant();
  });

  test('POST /contacts upserts by email with _meta, subscribed by default', async () => {
    const created = await post(t, { email: 'Ann@Example.com', data: { plan: 'free' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      email: 'Ann@Example.com',
      subscribed: true,
      data: { plan: 'free' },
      _meta: { isNew: true, isUpdate: false },
    });
    const again = await post(t, { email: 'ann@example.com', data: { seats: 3 } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      id: created.body.id,
      email: 'Ann@Example.com',
      data: { plan: 'free', seats: 3 },
      _meta: { isNew: false, isUpdate: true },
    });
  });

  test('a missing email is a flat 400 {error}; an invalid one a 422', async () => {
    const missing = await post(t, { data: {} });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: expect.any(String) });
    const invalid = await post(t, { email: 'not-an-email' });
    expectEnvelope(invalid, 422, 'VALIDATION_ERROR');
    expect(invalid.body.error.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string' });
    expectEnvelope(await post(t, { email: 42 }), 422, 'VALIDATION_ERROR');
    expectEnvelope(await post(t, { email: 'x@example.com', subscribed: 'yes' }), 422, 'VALIDATION_ERROR');
  });

  test('custom data: patch, null deletes, "" ignored, one-off not stored, reserved keys dropped, nesting', async () => {
    const c = await post(t, {
      email: 'rules@example.com',
      data: { a: 1, b: 'keep', nested: { x: 1, y: 2 }, locale: 'fr' },
    });
    const id = c.body.id;
    const patched = await call(
      'PATCH',
      `/contacts/${id}`,
      {
        data: {
          a: null,
          b: '',
          c: true,
          once: { value: 'temp', persistent: false },
          id: 'evil',
          email: 'evil@example.com',
          unsubscribeUrl: 'x',
          svc_id: 1,
          nested: { y: 3 },
        },
      },
      { key: t.secretKey },
    );
    expect(patched.status).toBe(200);
    expect(patched.body.data).toEqual({ b: 'keep', c: true, nested: { x: 1, y: 3 }, locale: 'fr' });
    expect(patched.body.email).toBe('rules@example.com');
  });

  test('data must be an object, and oversized data is refused', async () => {
    for (const data of ['str', [1, 2], 5, null]) {
      const res = await post(t, { email: 'bad-data@example.com', data });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.errors[0].field).toBe('data');
    }
    const huge = await post(t, { email: 'huge@example.com', data: { text: 'x'.repeat(70_000) } });
    expectEnvelope(huge, 422, 'VALIDATION_ERROR');
    const none = await call(
      'POST',
      '/contacts/lookup',
      { emails: ['bad-data@example.com', 'huge@example.com'] },
      { key: t.secretKey },
    );
    expect(none.body.found).toEqual([]);
  });

  test('PATCH changes email and subscription; a taken email is a 409; unknown ids are 404', async () => {
    const a = await post(t, { email: 'patch-a@example.com' });
    await post(t, { email: 'patch-b@example.com' });
    expectEnvelope(
      await call('PATCH', `/contacts/${a.body.id}`, { email: 'PATCH-B@example.com' }, { key: t.secretKey }),
      409,
      'CONFLICT',
    );
    const moved = await call(
      'PATCH',
      `/contacts/${a.body.id}`,
      { email: 'patch-c@example.com', subscribed: false },
      { key: t.secretKey },
    );
    expect(moved.body).toMatchObject({ email: 'patch-c@example.com', subscribed: false });
    expectEnvelope(
      await call('PATCH', `/contacts/${a.body.id}`, { email: 'nope' }, { key: t.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await call('GET', '/contacts/00000000-0000-4000-8000-000000000000', undefined, { key: t.secretKey }),
      404,
      'CONTACT_NOT_FOUND',
    );
    expectEnvelope(
      await call('GET', '/contacts/not-a-uuid', undefined, { key: t.secretKey }),
      404,
      'CONTACT_NOT_FOUND',
    );
  });

  test('subscription flips through PATCH are recorded as contact.subscribed/contact.unsubscribed events', async () => {
    const c = await post(t, { email: 'flip@example.com' });
    await call('PATCH', `/contacts/${c.body.id}`, { subscribed: false }, { key: t.secretKey });
    await call('PATCH', `/contacts/${c.body.id}`, { subscribed: false }, { key: t.secretKey });
    await call('PATCH', `/contacts/${c.body.id}`, { subscribed: true }, { key: t.secretKey });
    const events = await call('GET', `/events/contact/${c.body.id}`, undefined, { key: t.secretKey });
    expect(events.body.data.map((e: { name: string }) => e.name)).toEqual([
      'contact.subscribed',
      'contact.unsubscribed',
    ]);
  });

  test('DELETE removes the contact permanently', async () => {
    const c = await post(t, { email: 'gone@example.com' });
    const del = await call('DELETE', `/contacts/${c.body.id}`, undefined, { key: t.secretKey });
    expect(del.status).toBe(204);
    expectEnvelope(
      await call('GET', `/contacts/${c.body.id}`, undefined, { key: t.secretKey }),
      404,
      'CONTACT_NOT_FOUND',
    );
    expectEnvelope(
      await call('DELETE', `/contacts/${c.body.id}`, undefined, { key: t.secretKey }),
      404,
      'CONTACT_NOT_FOUND',
    );
  });

  test('lookup tells which emails exist, at most 500 per call', async () => {
    await post(t, { email: 'look@example.com' });
    const res = await call(
      'POST',
      '/contacts/lookup',
      { emails: ['LOOK@example.com', 'missing@example.com'] },
      { key: t.secretKey },
    );
    expect(res.status).toBe(200);
    expect(res.body.found.map((c: { email: string }) => c.email)).toEqual(['look@example.com']);
    expect(res.body.notFound).toEqual(['missing@example.com']);
    const many = Array.from({ length: 501 }, (_, i) => `u${i}@example.com`);
    expectEnvelope(
      await call('POST', '/contacts/lookup', { emails: many }, { key: t.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await call('POST', '/contacts/lookup', { emails: 'x' }, { key: t.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
  });
});

describe('contact lists', () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await newTenant();
    for (let i = 0; i < 25; i++) {
      await post(t, {
        email: `list-${String(i).padStart(2, '0')}@${i % 2 ? 'odd' : 'even'}.example.com`,
        subscribed: i % 5 !== 0,
      });
    }
  });

  test('cursor pagination: default 20, total only on the first page, hasMore, no duplicates', async () => {
    const first = await call('GET', '/contacts', undefined, { key: t.secretKey });
    expect(first.body.data).toHaveLength(20);
    expect(first.body.total).toBe(25);
    expect(first.body.hasMore).toBe(true);
    const second = await call('GET', `/contacts?cursor=${first.body.cursor}`, undefined, { key: t.secretKey });
    expect(second.body.data).toHaveLength(5);
    expect(second.body.total).toBe(0);
    expect(second.body.hasMore).toBe(false);
    expect(second.body.cursor).toBe('');
    const ids = [...first.body.data, ...second.body.data].map((c: { id: string }) => c.id);
    expect(new Set(ids).size).toBe(25);
    const times = [...first.body.data, ...second.body.data].map((c: { createdAt: string }) => c.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
  });

  test('limit is clamped to 1..100 and must be an integer', async () => {
    expect((await call('GET', '/contacts?limit=101', undefined, { key: t.secretKey })).body.data).toHaveLength(25);
    expect((await call('GET', '/contacts?limit=0', undefined, { key: t.secretKey })).body.data).toHaveLength(1);
    expectEnvelope(await call('GET', '/contacts?limit=abc', undefined, { key: t.secretKey }), 422, 'VALIDATION_ERROR');
  });

  test('a forged cursor is a 400', async () => {
    expectEnvelope(await call('GET', '/contacts?cursor=forged', undefined, { key: t.secretKey }), 400, 'BAD_REQUEST');
    const forged = Buffer.from(JSON.stringify(['createdAt', 'desc', "'; DROP TABLE contacts; --", 'x'])).toString(
      'base64url',
    );
    expectEnvelope(
      await call('GET', `/contacts?cursor=${forged}`, undefined, { key: t.secretKey }),
      400,
      'BAD_REQUEST',
    );
  });

  test('search: case-insensitive email substring; subscribed filters; sort by email asc walks every page', async () => {
    const odd = await call('GET', '/contacts?search=ODD.example&limit=100', undefined, { key: t.secretKey });
    expect(odd.body.data).toHaveLength(12);
    expect(odd.body.total).toBe(12);
    const unsub = await call('GET', '/contacts?subscribed=false', undefined, { key: t.secretKey });
    expect(unsub.body.total).toBe(5);
    expect(unsub.body.data.every((c: { subscribed: boolean }) => !c.subscribed)).toBe(true);
    const seen: string[] = [];
    let cursor = '';
    do {
      const page = await call(
        'GET',
        `/contacts?sort=email&dir=asc&limit=7${cursor ? `&cursor=${cursor}` : ''}`,
        undefined,
        { key: t.secretKey },
      );
      seen.push(...page.body.data.map((c: { email: string }) => c.email));
      cursor = page.body.hasMore ? page.body.cursor : '';
    } while (cursor);
    expect(seen).toEqual([...seen].sort());
    expect(seen).toHaveLength(25);
    const fallback = await call('GET', '/contacts?sort=bogus&dir=sideways&limit=3', undefined, { key: t.secretKey });
    expect(fallback.status).toBe(200);
  });
});

describe('fields and type inference', () => {
  test('first non-null value fixes the type; coverage counts nested keys; delete drops a key everywhere', async () => {
    const t = await newTenant();
    await post(t, {
      email: 'f1@example.com',
      data: {
        age: 30,
        vip: true,
        joined: '2024-01-02',
        seen: '2024-01-02T10:00:00Z',
        profile: { tier: 'gold' },
        note: null,
      },
    });
    await post(t, { email: 'f2@example.com', data: { age: 'thirty', profile: { tier: 'silver' } } });
    const f3 = await post(t, { email: 'f3@example.com', data: { code: '007', gone: 1 } });
    await post(t, { email: 'f4@example.com' });
    const fields = await call('GET', '/contacts/fields', undefined, { key: t.secretKey });
    const byName = Object.fromEntries(fields.body.fields.map((f: { field: string }) => [f.field, f]));
    expect(byName.email).toMatchObject({ type: 'string', isCustom: false, coverage: 1 });
    expect(byName['data.age']).toMatchObject({ type: 'number', isCustom: true, coverage: 0.5 });
    expect(byName['data.vip']).toMatchObject({ type: 'boolean', coverage: 0.25 });
    expect(byName['data.joined'].type).toBe('date');
    expect(byName['data.seen'].type).toBe('date');
    expect(byName['data.profile.tier']).toMatchObject({ type: 'string', coverage: 0.5 });
    expect(byName['data.code'].type).toBe('string');
    expect(byName['data.note']).toBeUndefined();

    // A field whose every value is removed leaves the list.
    expect(byName['data.gone']).toMatchObject({ coverage: 0.25 });
    const patched = await call('PATCH', `/contacts/${f3.body.id}`, { data: { gone: null } }, { key: t.secretKey });
    expect(patched.status).toBe(200);
    const listed = await call('GET', '/contacts/fields', undefined, { key: t.secretKey });
    expect(listed.body.fields.map((f: { field: string }) => f.field)).not.toContain('data.gone');

    const values = await call('GET', '/contacts/fields/data.profile.tier/values', undefined, { key: t.secretKey });
    expect(values.body.map((v: { value: unknown }) => v.value).sort()).toEqual(['gold', 'silver']);
    expect((await call('GET', '/contacts/fields/data.age/usage', undefined, { key: t.secretKey })).body).toMatchObject({
      segments: [],
      campaigns: [],
      workflows: [],
    });

    const del = await call('DELETE', '/contacts/fields/data.profile', undefined, { key: t.secretKey });
    expect(del.body.contactsUpdated).toBe(2);
    const after = await call('GET', '/contacts/fields', undefined, { key: t.secretKey });
    expect(after.body.fields.map((f: { field: string }) => f.field)).not.toContain('data.profile.tier');
    expectEnvelope(
      await call('DELETE', '/contacts/fields/email', undefined, { key: t.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
  });

  test('a field path names object keys only: a number under an array is a key no contact holds', async () => {
    const t = await newTenant();
    const key = { key: t.secretKey };
    const data = { list: [1, 2, 3], rows: [{ a: 1 }], byNumber: { '0': 'zero', '1': 'one' } };
    const c = await post(t, { email: 'arrays@example.com', data });
    for (const field of ['data.list.0', 'data.list.-1', 'data.rows.0.a', 'data.rows.0']) {
      expect((await call('DELETE', `/contacts/fields/${field}`, undefined, key)).body).toEqual({
        field,
        contactsUpdated: 0,
      });
      expect((await call('GET', `/contacts/fields/${field}/values`, undefined, key)).body).toEqual([]);
    }
    expect((await call('GET', `/contacts/${c.body.id}`, undefined, key)).body.data).toEqual(data);
    // An object's key that reads as a number is still a key.
    expect((await call('GET', '/contacts/fields/data.byNumber.0/values', undefined, key)).body).toEqual([
      { value: 'zero', count: 1 },
    ]);
    const del = await call('DELETE', '/contacts/fields/data.byNumber.0', undefined, key);
    expect(del.body.contactsUpdated).toBe(1);
    expect((await call('GET', `/contacts/${c.body.id}`, undefined, key)).body.data.byNumber).toEqual({ '1': 'one' });
  });
});
