import { call, expectEnvelope, newTenant, type Tenant } from './support/client.js';
import { uniqueDomain, verifiedDomain } from './support/messaging.js';

let t: Tenant;
let from: string;

beforeAll(async () => {
  t = await newTenant();
  from = `news@${(await verifiedDomain(t)).domain}`;
});

const create = (body: Record<string, unknown>, key = t.secretKey) => call('POST', '/templates', body, { key });

describe('templates', () => {
  test('POST /templates creates a MARKETING template by default; GET, PATCH and DELETE work on it', async () => {
    const created = await create({
      name: 'Welcome',
      description: 'first mail',
      subject: 'Hi {{name ?? "there"}}',
      body: '<p>Hello {{name}}</p>',
      from,
      fromName: 'News',
      replyTo: `reply@${from.split('@')[1]}`,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Welcome',
      description: 'first mail',
      type: 'MARKETING',
      from,
      fromName: 'News',
      projectId: t.projectId,
    });
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/);

    const got = await call('GET', `/templates/${created.body.id}`, undefined, { key: t.secretKey });
    expect(got.body).toEqual(created.body);

    const patched = await call(
      'PATCH',
      `/templates/${created.body.id}`,
      { subject: 'New subject', type: 'TRANSACTIONAL', replyTo: null },
      { key: t.secretKey },
    );
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      subject: 'New subject',
      type: 'TRANSACTIONAL',
      replyTo: null,
      body: '<p>Hello {{name}}</p>',
    });

    expect((await call('DELETE', `/templates/${created.body.id}`, undefined, { key: t.secretKey })).status).toBe(204);
    expectEnvelope(
      await call('GET', `/templates/${created.body.id}`, undefined, { key: t.secretKey }),
      404,
      'TEMPLATE_NOT_FOUND',
    );
  });

  test('a missing from is a 400 with a flat {error} body', async () => {
    for (const body of [{ name: 'x', subject: 's', body: 'b' }, { name: 'x', subject: 's', body: 'b', from: '' }, {}]) {
      const res = await create(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
  });

  test('unverified sender domain: a 403 with code INTERNAL_SERVER_ERROR and a "not verified" message', async () => {
    const res = await create({ name: 'x', subject: 's', body: 'b', from: `a@${uniqueDomain()}` });
    expectEnvelope(res, 403, 'INTERNAL_SERVER_ERROR');
    expect(res.body.error.message).toMatch(/not verified/);
    // Another project's verified domain does not count either.
    const other = await newTenant();
    expectEnvelope(
      await create({ name: 'x', subject: 's', body: 'b', from }, other.secretKey),
      403,
      'INTERNAL_SERVER_ERROR',
    );
  });

  test('invalid fields are 422 with field errors; a template that does not parse is refused when saved', async () => {
    const bad = await create({
      name: '',
      subject: 'a\nb',
      body: '',
      from: 'not-an-email',
      type: 'WEEKLY',
      replyTo: 'nope',
    });
    expectEnvelope(bad, 422, 'VALIDATION_ERROR');
    expect(bad.body.error.errors.map((e: { field: string }) => e.field).sort()).toEqual([
      'body',
      'from',
      'name',
      'replyTo',
      'subject',
      'type',
    ]);
    const liquid = await create({ name: 'x', subject: 'ok', body: '{% if %}', from });
    expectEnvelope(liquid, 422, 'VALIDATION_ERROR');
    expect(liquid.body.error.errors[0]).toMatchObject({ field: 'body', code: 'template_error' });
    const include = await create({ name: 'x', subject: 'ok', body: "{% include 'secrets' %}", from });
    expectEnvelope(include, 422, 'VALIDATION_ERROR');
    const patch = await call(
      'PATCH',
      `/templates/${(await create({ name: 'x', subject: 's', body: 'b', from })).body.id}`,
      { from: `a@${uniqueDomain()}` },
      { key: t.secretKey },
    );
    expectEnvelope(patch, 403, 'INTERNAL_SERVER_ERROR');
  });

  test('GET /templates pages with page/pageSize, filters by type and search, sorts with fall-back', async () => {
    const tenant = await newTenant();
    const sender = `hi@${(await verifiedDomain(tenant)).domain}`;
    const names = ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo'];
    for (const [i, name] of names.entries()) {
      const res = await create(
        {
          name,
          subject: `Subject ${name}`,
          body: 'b',
          from: sender,
          type: i % 2 ? 'TRANSACTIONAL' : 'MARKETING',
          description: i === 4 ? 'the SPECIAL one' : '',
        },
        tenant.secretKey,
      );
      expect(res.status).toBe(201);
    }
    const list = (q: string) => call('GET', `/templates${q}`, undefined, { key: tenant.secretKey });

    const first = await list('?pageSize=2');
    expect(first.body).toMatchObject({ total: 5, page: 1, pageSize: 2, totalPages: 3 });
    // createdAt desc by default
    expect(first.body.data.map((x: { name: string }) => x.name)).toEqual(['Echo', 'Delta']);
    expect((await list('?pageSize=2&page=3')).body.data.map((x: { name: string }) => x.name)).toEqual(['Alpha']);
    expect((await list('?sort=name&dir=asc')).body.data.map((x: { name: string }) => x.name)).toEqual(names);
    expect((await list('?sort=bogus&dir=bogus')).body.data[0].name).toBe('Echo');
    // Names of Object.prototype's members are unknown sorts too, not a 500.
    for (const sort of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const res = await list(`?sort=${sort}`);
      expect(res.status).toBe(200);
      expect(res.body.data[0].name).toBe('Echo');
    }
    expect((await list('?type=TRANSACTIONAL')).body.total).toBe(2);
    expect((await list('?search=special')).body.data.map((x: { name: string }) => x.name)).toEqual(['Echo']);
    expect((await list('?search=subject%20c')).body.data.map((x: { name: string }) => x.name)).toEqual(['Charlie']);
    expect((await list('?pageSize=500')).body.pageSize).toBe(100);
    expectEnvelope(await list('?page=0'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await list('?pageSize=abc'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await list('?type=WEEKLY'), 400, 'BAD_REQUEST');
  });

  test('duplicate returns a new template; usage lists no references yet; unknown and foreign ids are 404', async () => {
    const original = await create({ name: 'Orig', subject: 's', body: 'b', from });
    const copy = await call('POST', `/templates/${original.body.id}/duplicate`, undefined, { key: t.secretKey });
    expect(copy.status).toBe(201);
    expect(copy.body.id).not.toBe(original.body.id);
    expect(copy.body).toMatchObject({ name: 'Orig (copy)', subject: 's', body: 'b', from });
    const usage = await call('GET', `/templates/${original.body.id}/usage`, undefined, { key: t.secretKey });
    expect(usage.body).toEqual({ templateId: original.body.id, campaigns: [], workflows: [] });

    const other = await newTenant();
    for (const [method, suffix] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['POST', '/duplicate'],
      ['GET', '/usage'],
    ] as const) {
      expectEnvelope(
        await call(method, `/templates/${original.body.id}${suffix}`, method === 'PATCH' ? { name: 'x' } : undefined, {
          key: other.secretKey,
        }),
        404,
        'TEMPLATE_NOT_FOUND',
      );
      expectEnvelope(
        await call(method, `/templates/not-a-uuid${suffix}`, method === 'PATCH' ? { name: 'x' } : undefined, {
          key: t.secretKey,
        }),
        404,
        'TEMPLATE_NOT_FOUND',
      );
    }
    expectEnvelope(await call('GET', '/templates', undefined, { key: t.publicKey }), 401, 'INVALID_API_KEY');
  });

  test('preview data keys __proto__, constructor and prototype render like any key, as in a send', async () => {
    const data = JSON.parse('{"__proto__": {"tier": "gold"}, "constructor": "c", "prototype": "p"}');
    const res = await call(
      'POST',
      '/templates/preview',
      {
        subject: 'Tier {{__proto__.tier}}',
        body: '<p>{{constructor}} {{prototype}} {{data.__proto__.tier}}</p>',
        data,
      },
      { key: t.secretKey },
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ subject: 'Tier gold', body: '<p>c p gold</p>' });
  });
});
