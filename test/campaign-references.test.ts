import { call, newTenant, type Tenant } from './support/client.js';
import { verifiedDomain } from './support/messaging.js';

// Scheduled campaigns in GET /activity/upcoming; campaigns whose audience reads a field or an event in
// the field and event usage endpoints.

let t: Tenant;
let other: Tenant;
let domain: string;
const c = (method: string, url: string, body?: unknown, key = t.secretKey) => call(method, url, body, { key });

const filtered = (filters: object[]) => ({
  name: 'Filtered news',
  subject: 'Hello',
  body: '<p>Hi</p>',
  from: `news@${domain}`,
  audienceType: 'FILTERED',
  audienceCondition: { logic: 'AND', groups: [{ filters }] },
});

beforeAll(async () => {
  [t, other] = await Promise.all([newTenant(), newTenant()]);
  domain = (await verifiedDomain(t)).domain;
});

test('a scheduled campaign is listed in /activity/upcoming at its time; cancelled, it leaves the list', async () => {
  const created = await c('POST', '/campaigns', filtered([{ field: 'data.tier', operator: 'equals', value: 'gold' }]));
  expect(created.status).toBe(201);
  const id = created.body.data.id;
  const at = new Date(Date.now() + 3_600_000).toISOString();
  expect((await c('POST', `/campaigns/${id}/send`, { scheduledFor: at })).body.data.status).toBe('SCHEDULED');

  const upcoming = await c('GET', '/activity/upcoming');
  expect(upcoming.status).toBe(200);
  expect(upcoming.body.data).toContainEqual(
    expect.objectContaining({ kind: 'campaign', id, name: 'Filtered news', dueAt: at, status: 'SCHEDULED' }),
  );
  const theirs = await c('GET', '/activity/upcoming', undefined, other.secretKey);
  expect(theirs.body.data.map((i: { id: string }) => i.id)).not.toContain(id);

  expect((await c('POST', `/campaigns/${id}/cancel`)).status).toBe(200);
  const after = await c('GET', '/activity/upcoming');
  expect(after.body.data.map((i: { id: string }) => i.id)).not.toContain(id);
});

test('field and event usage list the campaigns whose audience condition reads them', async () => {
  const byField = await c('POST', '/campaigns', filtered([{ field: 'data.region', operator: 'equals', value: 'eu' }]));
  const byEvent = await c('POST', '/campaigns', filtered([{ field: 'event.upgraded', operator: 'triggered' }]));
  expect([byField.status, byEvent.status]).toEqual([201, 201]);

  const field = await c('GET', '/contacts/fields/data.region/usage');
  expect(field.status).toBe(200);
  expect(field.body.campaigns).toContainEqual(expect.objectContaining({ id: byField.body.data.id }));
  expect(field.body.campaigns.map((x: { id: string }) => x.id)).not.toContain(byEvent.body.data.id);

  const event = await c('GET', '/events/upgraded/usage');
  expect(event.body.campaigns).toContainEqual(expect.objectContaining({ id: byEvent.body.data.id }));

  const theirs = await c('GET', '/contacts/fields/data.region/usage', undefined, other.secretKey);
  expect(theirs.body.campaigns).toEqual([]);
});
