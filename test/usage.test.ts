import { call, expectEnvelope, newTenant, type Tenant } from './support/client.js';

// GET /contacts/fields/{field}/usage and GET /events/{eventName}/usage list the segments whose stored condition
// references the field (or a path below it) or the event, at any depth of the tree, in the caller's project only.

const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });

let a: Tenant;
let b: Tenant;
const ids: Record<string, string> = {};

const get = (t: Tenant, url: string) => call('GET', url, undefined, { key: t.secretKey });
const names = (res: { body: { segments: { name: string }[] } }) => res.body.segments.map((s) => s.name);

async function segment(t: Tenant, name: string, body: object): Promise<string> {
  const res = await call('POST', '/segments', { name, ...body }, { key: t.secretKey });
  if (res.status !== 201 && res.status !== 200) throw new Error(`segment: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

beforeAll(async () => {
  [a, b] = await Promise.all([newTenant(), newTenant()]);
  ids.plan = await segment(a, 'Pro plan', {
    condition: tree({ field: 'data.plan', operator: 'equals', value: 'pro' }),
  });
  ids.nested = await segment(a, 'Nested', {
    condition: {
      logic: 'AND',
      groups: [
        {
          filters: [{ field: 'email', operator: 'contains', value: '@' }],
          conditions: {
            logic: 'OR',
            groups: [
              {
                filters: [
                  { field: 'event.signup', operator: 'triggered' },
                  { field: 'data.profile.tier', operator: 'exists' },
                ],
              },
            ],
          },
        },
      ],
    },
  });
  ids.opened = await segment(a, 'Openers', { condition: tree({ field: 'email.open', operator: 'triggered' }) });
  ids.static = await segment(a, 'Hand picked', { type: 'STATIC' });
  await segment(b, 'B plan', {
    condition: tree({ field: 'data.plan', operator: 'exists' }, { field: 'event.signup', operator: 'triggered' }),
  });
});

describe('GET /contacts/fields/{field}/usage', () => {
  test('lists the segments filtering on the field, with empty campaign and workflow lists', async () => {
    const res = await get(a, '/contacts/fields/data.plan/usage');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      field: 'data.plan',
      segments: [{ id: ids.plan, name: 'Pro plan' }],
      campaigns: [],
      workflows: [],
    });
    // A bare custom key is the same field.
    expect((await get(a, '/contacts/fields/plan/usage')).body).toEqual(res.body);
  });

  test('nested groups count; a data field is referenced by filters on paths below it, not by lookalikes', async () => {
    expect(names(await get(a, '/contacts/fields/data.profile/usage'))).toEqual(['Nested']);
    expect(names(await get(a, '/contacts/fields/data.profile.tier/usage'))).toEqual(['Nested']);
    expect(names(await get(a, '/contacts/fields/data.pro/usage'))).toEqual([]);
    expect(names(await get(a, '/contacts/fields/email/usage'))).toEqual(['Nested']);
    expect(names(await get(a, '/contacts/fields/subscribed/usage'))).toEqual([]);
  });

  test('follows condition changes', async () => {
    const patched = await call(
      'PATCH',
      `/segments/${ids.plan}`,
      { condition: tree({ field: 'data.tier', operator: 'exists' }) },
      { key: a.secretKey },
    );
    expect(patched.status).toBe(200);
    expect(names(await get(a, '/contacts/fields/data.plan/usage'))).toEqual([]);
    expect(names(await get(a, '/contacts/fields/data.tier/usage'))).toEqual(['Pro plan']);
  });

  test('needs the secret key', async () => {
    expectEnvelope(
      await call('GET', '/contacts/fields/data.plan/usage', undefined, { key: a.publicKey }),
      401,
      'INVALID_API_KEY',
    );
  });
});

describe('GET /events/{eventName}/usage', () => {
  test('lists the segments with event.<name> filters', async () => {
    const res = await get(a, '/events/signup/usage');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      event: 'signup',
      segments: [{ id: ids.nested, name: 'Nested' }],
      campaigns: [],
      workflows: [],
    });
    expect(names(await get(a, '/events/never-tracked/usage'))).toEqual([]);
  });

  test('an email.<activity> event is referenced by the email.<activity> filters on the same lifecycle', async () => {
    expect(names(await get(a, '/events/email.open/usage'))).toEqual(['Openers']);
    expect(names(await get(a, '/events/email.click/usage'))).toEqual([]);
  });

  test("another project's segments never show", async () => {
    expect(names(await get(b, '/events/signup/usage'))).toEqual(['B plan']);
    expect(names(await get(b, '/contacts/fields/data.profile/usage'))).toEqual([]);
    expect(names(await get(a, '/events/signup/usage'))).toEqual(['Nested']);
  });
});
