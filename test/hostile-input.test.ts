import { call, expectEnvelope, newTenant, uniqueEmail, type Answer, type Tenant } from './support/client.js';

// Malformed input that used to answer 500: each case must be a 4xx in SPEC.md's envelope and change nothing.

const NUL = '\u0000';
const HUGE_EMAIL = `${'a'.repeat(200_000)}@example.com`;
const UUID = '00000000-0000-4000-8000-000000000000';

const nested = (levels: number, leaf: unknown = 1): unknown => {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
};
const cursor = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
const filterOn = (filter: unknown) => ({ condition: { logic: 'AND', groups: [{ filters: [filter] }] } });

function expectClientError(res: Answer, what: string): void {
  if (res.status < 400 || res.status >= 500)
    throw new Error(`${what}: expected a 4xx, got ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  expect(res.body).toMatchObject({
    success: false,
    error: { statusCode: res.status, code: expect.any(String), message: expect.any(String) },
  });
}

describe('hostile input', () => {
  let t: Tenant;
  const key = () => ({ key: t.secretKey });
  const contactCount = async () => (await call('GET', '/contacts', undefined, key())).body.total as number;

  beforeAll(async () => {
    t = await newTenant();
  });

  test('U+0000 in a JSON body (key or value) is a 422 naming the field, before any RPC, storing nothing', async () => {
    const before = await contactCount();
    const value = await call('POST', '/contacts', { email: uniqueEmail(), data: { note: `a${NUL}b` } }, key());
    expectEnvelope(value, 422, 'VALIDATION_ERROR');
    expect(value.body.error.errors[0]).toMatchObject({ field: 'data.note', code: 'invalid_string' });
    const inKey = await call('POST', '/contacts', { email: uniqueEmail(), data: { [`k${NUL}`]: 1 } }, key());
    expectEnvelope(inKey, 422, 'VALIDATION_ERROR');
    expect(inKey.body.error.errors[0].field).toBe('data.k\\u0000');
    const cases: [string, string, unknown, object?][] = [
      ['POST', '/events/track', { email: uniqueEmail(), event: 'signup', data: { plan: NUL } }],
      ['POST', '/v1/track', { email: uniqueEmail(), event: 'signup', data: { plan: NUL } }, { key: t.publicKey }],
      ['POST', '/templates', { name: `n${NUL}`, subject: 's', body: 'b', from: 'a@example.com' }],
      ['POST', '/contacts/filter', filterOn({ field: 'email', operator: 'equals', value: `a${NUL}` })],
      [
        'POST',
        '/webhooks/test',
        { type: 'delivery', messageId: `m${NUL}` },
        { key: undefined, headers: { 'x-webhook-secret': 'test-webhook-secret-0123456789' } },
      ],
      ['POST', '/users/@me/projects', { name: `p${NUL}` }, { key: undefined, cookie: t.cookie }],
    ];
    for (const [method, url, body, opts] of cases) {
      const res = await call(method, url, body, { ...key(), ...opts });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
    }
    expect(await contactCount()).toBe(before);
  });

  test('a number beyond a double (1e400, read as Infinity) is a 422 naming the field, storing nothing', async () => {
    const before = await contactCount();
    const segments = (await call('GET', '/segments', undefined, key())).body.length;
    const tree = '{"logic":"AND","groups":[{"filters":[{"field":"data.age","operator":"greaterThan","value":1e400}]}]}';
    const from = 'sandbox@sandbox.localhost';
    const cases: [string, string, string, string][] = [
      ['POST', '/segments', `{"name":"inf","condition":${tree}}`, 'condition.groups.0.filters.0.value'],
      [
        'POST',
        '/campaigns',
        `{"name":"n","subject":"s","body":"b","from":"${from}","audienceType":"FILTERED","audienceCondition":${tree}}`,
        'audienceCondition.groups.0.filters.0.value',
      ],
      ['POST', '/contacts/filter', `{"condition":${tree}}`, 'condition.groups.0.filters.0.value'],
      ['POST', '/contacts', `{"email":"${uniqueEmail()}","data":{"n":-1e400}}`, 'data.n'],
    ];
    for (const [method, url, raw, field] of cases) {
      const res = await call(method, url, undefined, { ...key(), raw });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.errors[0]).toMatchObject({ field, code: 'too_big' });
    }
    expect(await contactCount()).toBe(before);
    expect((await call('GET', '/segments', undefined, key())).body).toHaveLength(segments);
  });

  test('a lone UTF-16 surrogate ("\\ud800") is a 422 naming the field, before any RPC, storing nothing', async () => {
    const before = await contactCount();
    const email = uniqueEmail();
    const from = 'sandbox@sandbox.localhost';
    const filter = '{"groups":[{"filters":[{"field":"data.a","operator":"equals","value":"\\ud800"}]}]}';
    const cases: [string, string, string, object?][] = [
      ['/contacts', `{"email":"${email}","data":{"note":"a\\ud800b"}}`, 'data.note'],
      ['/contacts', `{"email":"${email}","data":{"k\\udc00":1}}`, 'data.k\\udc00'],
      ['/v1/send', `{"to":"${email}","from":"${from}","subject":"Hi \\ud83d","body":"b"}`, 'subject'],
      ['/v1/send?via=express', `{"to":"${email}","from":"${from}","subject":"s","body":"\\udfff"}`, 'body'],
      [
        '/v1/track',
        `{"email":"${email}","event":"e","data":{"tags":["\\udfff"]}}`,
        'data.tags.0',
        { key: t.publicKey },
      ],
      ['/contacts/filter', `{"condition":${filter}}`, 'condition.groups.0.filters.0.value'],
    ];
    for (const [url, raw, field, opts] of cases) {
      const res = await call('POST', url, undefined, { ...key(), raw, ...opts });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.errors[0]).toMatchObject({ field, code: 'invalid_string' });
    }
    expect(await contactCount()).toBe(before);
    // A surrogate pair is one character (an emoji) and is kept as sent.
    const pair = await call('POST', '/contacts', undefined, {
      ...key(),
      raw: `{"email":"${email}","data":{"note":"\\ud83d\\ude00"}}`,
    });
    expect(pair.status).toBe(201);
    expect(pair.body.data.note).toBe('\u{1F600}');
  });

  test('U+0000 in a query string or path (%00) is a 400', async () => {
    for (const url of [
      '/contacts?search=a%00b',
      '/events?name=x%00',
      '/templates?search=%00',
      '/activity?type=a%00',
      '/activity?a%00=1',
      '/domains/x%00/verify',
    ]) {
      expectEnvelope(await call('GET', url, undefined, key()), 400, 'BAD_REQUEST');
    }
    expectEnvelope(await call('DELETE', '/events/signup%00', undefined, key()), 400, 'BAD_REQUEST');
  });

  test('JSON nested deeper than 32 levels is a 400, however deep (no recursion)', async () => {
    const deep = await call('POST', '/contacts', { email: uniqueEmail(), data: nested(150) }, key());
    expectEnvelope(deep, 400, 'BAD_REQUEST');
    expect(deep.body.error.details).toEqual({ maxDepth: 32 });
    const arrays = '['.repeat(400_000) + ']'.repeat(400_000);
    expectEnvelope(await call('POST', '/contacts', undefined, { ...key(), raw: arrays }), 400, 'BAD_REQUEST');
    expectEnvelope(
      await call('POST', '/v1/send', { to: 'a@example.com', data: nested(200) }, key()),
      400,
      'BAD_REQUEST',
    );
    // Inside the limit, the service's own 10-level rule for custom data still answers.
    expectEnvelope(
      await call('POST', '/contacts', { email: uniqueEmail(), data: nested(20) }, key()),
      422,
      'VALIDATION_ERROR',
    );
  });

  test('a filter path of 10,000 segments and a tree of 10,000 groups are 422s', async () => {
    const path = await call(
      'POST',
      '/contacts/filter',
      filterOn({ field: `data.${Array(10_000).fill('a').join('.')}`, operator: 'exists' }),
      key(),
    );
    expectEnvelope(path, 422, 'VALIDATION_ERROR');
    const eleven = await call(
      'POST',
      '/contacts/filter',
      filterOn({ field: `data.${Array(11).fill('a').join('.')}`, operator: 'exists' }),
      key(),
    );
    expectEnvelope(eleven, 422, 'VALIDATION_ERROR');
    const groups = await call(
      'POST',
      '/contacts/filter',
      { condition: { logic: 'OR', groups: Array(10_000).fill({ filters: [] }) } },
      key(),
    );
    expectEnvelope(groups, 422, 'VALIDATION_ERROR');
  });

  test('a forged cursor with an impossible date is a 400 like any bad cursor', async () => {
    expectEnvelope(
      await call(
        'GET',
        `/contacts?cursor=${cursor(['createdAt', 'desc', '9999-99-99 99:99:99', UUID])}`,
        undefined,
        key(),
      ),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await call(
        'GET',
        `/contacts?cursor=${cursor(['createdAt', 'desc', '2026-02-30 10:00:00+00', UUID])}`,
        undefined,
        key(),
      ),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await call(
        'GET',
        `/events?cursor=${cursor(['events', 'desc', '2026-13-01 00:00:00+00', UUID])}`,
        undefined,
        key(),
      ),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await call(
        'GET',
        `/contacts?sort=email&dir=asc&cursor=${cursor(['email', 'asc', `a${NUL}`, UUID])}`,
        undefined,
        key(),
      ),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await call('GET', `/activity?cursor=${cursor(['-271821-04-20T00:00:00.000Z', UUID])}`, undefined, key()),
      400,
      'BAD_REQUEST',
    );
  });

  test('a 200 KB email address is a 4xx wherever an email is accepted', async () => {
    const cases: [string, string, unknown, object?][] = [
      ['POST', '/contacts', { email: HUGE_EMAIL }],
      ['POST', '/events/track', { email: HUGE_EMAIL, event: 'x' }],
      ['POST', '/v1/track', { email: HUGE_EMAIL, event: 'x' }, { key: t.publicKey }],
      ['POST', '/v1/send', { to: HUGE_EMAIL, from: 'a@example.com', subject: 's', body: 'b' }],
      ['POST', '/v1/verify', { email: HUGE_EMAIL }],
      ['POST', '/templates', { name: 'n', subject: 's', body: 'b', from: HUGE_EMAIL }],
      ['POST', '/auth/signup', { email: HUGE_EMAIL, password: 'password-123' }, { key: undefined }],
      ['POST', '/auth/login', { email: HUGE_EMAIL, password: 'password-123' }, { key: undefined }],
      [
        'POST',
        `/projects/${t.projectId}/members`,
        { email: HUGE_EMAIL, role: 'member' },
        { key: undefined, cookie: t.cookie },
      ],
    ];
    for (const [method, url, body, opts] of cases)
      expectClientError(await call(method, url, body, { ...key(), ...opts }), `${method} ${url}`);
    const contact = await call('POST', '/contacts', { email: uniqueEmail() }, key());
    expectEnvelope(
      await call('PATCH', `/contacts/${contact.body.id}`, { email: HUGE_EMAIL }, key()),
      422,
      'VALIDATION_ERROR',
    );
    // RFC 5321: 64 characters before the @, 254 in all.
    expectEnvelope(
      await call('POST', '/contacts', { email: `${'a'.repeat(65)}@example.com` }, key()),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await call('POST', '/contacts', { email: `a@${Array(5).fill('b'.repeat(60)).join('.')}.com` }, key()),
      422,
      'VALIDATION_ERROR',
    );
  });

  test('integers out of range: page and days are 422s, page sizes and windows are clamped', async () => {
    for (const url of [
      '/templates?page=99999999999999999999',
      '/templates?page=1000001',
      '/events/stats?days=999999999999',
      '/events/stats?days=0',
      '/events/stats?days=abc',
    ]) {
      expectEnvelope(await call('GET', url, undefined, key()), 422, 'VALIDATION_ERROR');
    }
    expectEnvelope(
      await call('POST', '/contacts/filter', { offset: 1e20, condition: { groups: [] } }, key()),
      422,
      'VALIDATION_ERROR',
    );
    expect((await call('GET', '/templates?pageSize=99999999999999999999', undefined, key())).body.pageSize).toBe(100);
    expect((await call('GET', '/activity/stats?days=999999999999', undefined, key())).body.days).toBe(365);
    expect((await call('GET', '/activity/recent-count?minutes=999999999999', undefined, key())).status).toBe(200);
    expect((await call('GET', '/contacts?limit=99999999999999999999', undefined, key())).status).toBe(200);
    expect((await call('GET', '/events/stats?days=3650', undefined, key())).status).toBe(200);
  });

  test('Content-Encoding: gzip with a body that is not gzip is a 400; an unknown encoding a 415', async () => {
    const before = await contactCount();
    const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip' };
    const notGzip = await call('POST', '/contacts', undefined, {
      ...key(),
      raw: JSON.stringify({ email: uniqueEmail() }),
      headers,
    });
    expectEnvelope(notGzip, 400, 'BAD_REQUEST');
    const unknown = await call('POST', '/contacts', undefined, {
      ...key(),
      raw: '{}',
      headers: { ...headers, 'content-encoding': 'zz' },
    });
    expectEnvelope(unknown, 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(await contactCount()).toBe(before);
  });

  test('JSON sent as a form or as text is a 415 that names the content type, and stores nothing', async () => {
    const before = await contactCount();
    const body = JSON.stringify({ email: uniqueEmail() });
    for (const type of ['application/x-www-form-urlencoded', 'text/plain']) {
      const res = await call('POST', '/contacts', undefined, {
        ...key(),
        raw: body,
        headers: { 'content-type': type },
      });
      expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(res.body.error.message).toContain(type);
    }
    expect(await contactCount()).toBe(before);
  });

  test('a known path with a method it does not answer is a 405 with Allow; an unknown path stays a 404', async () => {
    const res = await call('PUT', '/contacts', {}, key());
    expectEnvelope(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST');
    expectEnvelope(await call('PUT', '/no-such-route', {}, key()), 404, 'RESOURCE_NOT_FOUND');
  });

  test('a path that does not percent-decode is a 400; a URL over 16 KB a 431, both in the envelope', async () => {
    expectEnvelope(await call('GET', '/contacts/%E0%A4%A', undefined, key()), 400, 'BAD_REQUEST');
    expectEnvelope(await call('GET', `/contacts?search=${'x'.repeat(20_000)}`, undefined, key()), 431, 'BAD_REQUEST');
  });
});
