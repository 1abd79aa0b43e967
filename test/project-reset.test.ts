import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { call, eventually, expectEnvelope, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { signUpVerified, verifiedDomain, waitForMail } from './support/messaging.js';

// Project reset and deletion through the gateway: a saga on the bus that every service takes part in.
// The proof is each service's own database, read table by table for rows carrying the project's id.

const DATA_SERVICES = ['contacts', 'messaging', 'segments', 'campaigns', 'workflows'] as const;
const SERVICES = [...DATA_SERVICES, 'identity'] as const;

const dbs = new Map<string, pg.Client>();

beforeAll(async () => {
  for (const s of SERVICES) {
    const db = new pg.Client({ connectionString: serviceDatabaseUrl(s, platform.env.DATABASE_URL, platform.env) });
    await db.connect();
    dbs.set(s, db);
  }
});

afterAll(async () => {
  for (const db of dbs.values()) await db.end();
});

/** Rows per table of a service's database whose project_id is the project (every such table, found by column). */
async function rowsOf(service: string, projectId: string): Promise<Record<string, number>> {
  const db = dbs.get(service)!;
  const { rows: tables } = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.columns
     WHERE table_schema = 'public' AND column_name = 'project_id' ORDER BY table_name`,
  );
  expect(tables.length).toBeGreaterThan(0);
  const counts: Record<string, number> = {};
  for (const { table_name } of tables) {
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM "${table_name}" WHERE project_id = $1`, [
      projectId,
    ]);
    counts[table_name] = Number(rows[0].n);
  }
  return counts;
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** Every table of the service holds no row of the project (the table names show in a failure). */
async function expectNothingLeft(service: string, projectId: string): Promise<void> {
  const counts = await rowsOf(service, projectId);
  const zeros = Object.fromEntries(Object.keys(counts).map((k) => [k, 0]));
  expect({ service, ...counts }).toEqual({ service, ...zeros });
}

/** No row of the project was removed from any table (rows may have been added since: delivery, activity). */
async function expectUntouched(service: string, projectId: string, before: Record<string, number>): Promise<void> {
  const after = await rowsOf(service, projectId);
  for (const [table, n] of Object.entries(before))
    expect([service, table, after[table] >= n]).toEqual([service, table, true]);
}

const owner = (t: Tenant) => ({ cookie: t.cookie });
const api = (t: Tenant, method: string, url: string, body?: unknown) => call(method, url, body, { key: t.secretKey });

/** Data in every service: domain, template, contacts, events, segment, campaigns, a waiting workflow execution. */
async function populate(t: Tenant): Promise<{ domain: string }> {
  const { domain } = await verifiedDomain(t);
  const from = `hello@${domain}`;
  const ok = (res: { status: number; body: unknown }, status = 201) =>
    expect([res.status, res.body]).toEqual([status, expect.anything()]);
  ok(await api(t, 'POST', '/templates', { name: 'Welcome', subject: 'Hi', body: '<p>hi</p>', from }));
  const event = `signup-${Date.now().toString(36)}`;
  const w = await api(t, 'POST', '/workflows', { name: 'Onboarding', eventName: event });
  ok(w);
  const delay = await api(t, 'POST', `/workflows/${w.body.id}/steps`, {
    type: 'DELAY',
    config: { amount: 1, unit: 'days' },
  });
  ok(delay);
  const mail = await api(t, 'POST', `/workflows/${w.body.id}/steps`, {
    type: 'SEND_EMAIL',
    config: { subject: 'Day two', body: '<p>two</p>', from },
  });
  ok(mail);
  const link = (fromStepId: string, toStepId: string) =>
    api(t, 'POST', `/workflows/${w.body.id}/transitions`, { fromStepId, toStepId });
  ok(await link(w.body.steps[0].id, delay.body.id));
  ok(await link(delay.body.id, mail.body.id));
  ok(await api(t, 'PATCH', `/workflows/${w.body.id}`, { enabled: true }), 200);
  const to = uniqueEmail('reset');
  ok(await api(t, 'POST', '/contacts', { email: to, data: { plan: 'pro' } }));
  expect((await call('POST', '/v1/track', { email: to, event }, { key: t.publicKey })).status).toBe(200);
  ok(
    await api(t, 'POST', '/segments', {
      name: 'Pro',
      trackMembership: true,
      condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
    }),
  );
  const campaign = await api(t, 'POST', '/campaigns', { name: 'News', subject: 'News', body: '<p>n</p>', from });
  ok(campaign);
  const scheduledFor = new Date(Date.now() + 86_400_000).toISOString();
  ok(await api(t, 'POST', `/campaigns/${campaign.body.data.id}/send`, { scheduledFor }), 200);
  expect((await api(t, 'POST', '/v1/send', { to, from, subject: 'Hello', body: '<p>hello</p>' })).status).toBe(200);
  await waitForMail(to);
  // The execution waits on its DELAY step: work in flight that the reset must stop.
  await eventually(async () => {
    const list = await api(t, 'GET', `/workflows/${w.body.id}/executions`);
    return list.body.data?.some((e: { status: string }) => e.status === 'WAITING') ? true : undefined;
  });
  return { domain };
}

async function join(t: Tenant): Promise<{ cookie: string }> {
  const user = await signUpVerified();
  const invited = await call(
    'POST',
    `/projects/${t.projectId}/members`,
    { email: user.email, role: 'admin' },
    owner(t),
  );
  expect(invited.status).toBe(201);
  const accepted = await call('POST', `/users/@me/invitations/${invited.body.id}/accept`, undefined, user);
  expect(accepted.status).toBe(200);
  return user;
}

describe('project reset and deletion', () => {
  test('reset wipes the project in every service, leaves other projects alone; the project keeps working', async () => {
    const [t, other] = await Promise.all([newTenant(), newTenant()]);
    await Promise.all([populate(t), populate(other)]);
    for (const s of DATA_SERVICES) expect([s, total(await rowsOf(s, t.projectId))]).not.toEqual([s, 0]);
    const otherBefore = Object.fromEntries(
      await Promise.all(DATA_SERVICES.map(async (s) => [s, await rowsOf(s, other.projectId)] as const)),
    );

    // Only the owner: a member (even an admin) is refused, a stranger sees no project, no session is 401.
    const admin = await join(t);
    expectEnvelope(
      await call('POST', `/users/@me/projects/${t.projectId}/reset`, undefined, admin),
      403,
      'PROJECT_ACCESS_DENIED',
    );
    expectEnvelope(
      await call('POST', `/users/@me/projects/${t.projectId}/reset`, undefined, owner(other)),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('GET', `/users/@me/projects/${t.projectId}/reset`, undefined, owner(other)),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('POST', '/users/@me/projects/not-a-uuid/reset', undefined, owner(t)),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(await call('POST', `/users/@me/projects/${t.projectId}/reset`), 401, 'UNAUTHORIZED');
    // No reset asked yet: nothing to show.
    expectEnvelope(
      await call('GET', `/users/@me/projects/${t.projectId}/reset`, undefined, owner(t)),
      404,
      'RESOURCE_NOT_FOUND',
    );

    const started = await call('POST', `/users/@me/projects/${t.projectId}/reset`, undefined, owner(t));
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ projectId: t.projectId, kind: 'reset', status: 'running', completedAt: null });
    expect(started.body.steps.map((s: { service: string }) => s.service).sort()).toEqual([...DATA_SERVICES].sort());
    // Campaigns and workflows (the producers of mail) go first; the others wait for them.
    for (const s of started.body.steps) {
      expect(s.status).toBe(['campaigns', 'workflows'].includes(s.service) ? 'running' : 'waiting');
    }

    const done = await eventually(
      async () => {
        const res = await call('GET', `/users/@me/projects/${t.projectId}/reset`, undefined, admin);
        expect(res.status).toBe(200);
        return res.body.status === 'completed' ? res.body : undefined;
      },
      30_000,
      'reset completed',
    );
    expect(done.id).toBe(started.body.id);
    expect(done.steps.every((s: { status: string; doneAt: string }) => s.status === 'done' && s.doneAt)).toBe(true);
    expect(new Date(done.completedAt).getTime()).toBeGreaterThanOrEqual(new Date(done.createdAt).getTime());

    for (const s of DATA_SERVICES) await expectNothingLeft(s, t.projectId);
    for (const s of DATA_SERVICES) await expectUntouched(s, other.projectId, otherBefore[s]);
    // Its members and keys stay.
    expect((await call('GET', `/projects/${t.projectId}/members`, undefined, owner(t))).body).toHaveLength(2);

    // The reset project works as a new one: contacts, a domain again, a send.
    const to = uniqueEmail('after-reset');
    expect((await api(t, 'GET', '/contacts')).body.total).toBe(0);
    expect((await api(t, 'POST', '/contacts', { email: to })).status).toBe(201);
    const { domain } = await verifiedDomain(t);
    const sent = await api(t, 'POST', '/v1/send', {
      to,
      from: `again@${domain}`,
      subject: 'Back',
      body: '<p>back</p>',
    });
    expect(sent.status).toBe(200);
    await waitForMail(to);
  }, 120_000);

  test('deletion refuses the keys at once, removes the project and leaves nothing of it in any database', async () => {
    const [t, other] = await Promise.all([newTenant(), newTenant()]);
    await Promise.all([populate(t), populate(other)]);
    const otherBefore = Object.fromEntries(
      await Promise.all(DATA_SERVICES.map(async (s) => [s, await rowsOf(s, other.projectId)] as const)),
    );
    // The key is cached by the gateway now.
    expect((await api(t, 'GET', '/contacts')).status).toBe(200);

    const admin = await join(t);
    expectEnvelope(
      await call('DELETE', `/users/@me/projects/${t.projectId}`, undefined, admin),
      403,
      'PROJECT_ACCESS_DENIED',
    );
    expectEnvelope(
      await call('DELETE', `/users/@me/projects/${t.projectId}`, undefined, owner(other)),
      404,
      'RESOURCE_NOT_FOUND',
    );

    const deleted = await call('DELETE', `/users/@me/projects/${t.projectId}`, undefined, owner(t));
    expect(deleted.status).toBe(202);
    expect(deleted.body).toMatchObject({ projectId: t.projectId, kind: 'delete', status: 'running' });
    // Refused at once, not after the key cache's TTL.
    expectEnvelope(await api(t, 'GET', '/contacts'), 401, 'INVALID_API_KEY');
    expectEnvelope(
      await call('POST', '/v1/track', { email: uniqueEmail(), event: 'x' }, { key: t.publicKey }),
      401,
      'INVALID_API_KEY',
    );
    expect((await call('GET', '/users/@me/projects', undefined, owner(t))).body).toEqual([]);
    expectEnvelope(await call('GET', `/projects/${t.projectId}/members`, undefined, admin), 404, 'RESOURCE_NOT_FOUND');
    // Only its owner follows the deletion; a second one finds no project.
    expectEnvelope(
      await call('GET', `/users/@me/projects/${t.projectId}/reset`, undefined, admin),
      404,
      'RESOURCE_NOT_FOUND',
    );
    expectEnvelope(
      await call('DELETE', `/users/@me/projects/${t.projectId}`, undefined, owner(t)),
      404,
      'RESOURCE_NOT_FOUND',
    );

    // While it runs the owner sees its steps; once every service is done, the deletion's record goes too.
    await eventually(
      async () => {
        const res = await call('GET', `/users/@me/projects/${t.projectId}/reset`, undefined, owner(t));
        if (res.status === 200) expect(res.body).toMatchObject({ kind: 'delete', status: 'running' });
        return res.status === 404 ? true : undefined;
      },
      30_000,
      'deletion finished',
    );
    for (const s of SERVICES) await expectNothingLeft(s, t.projectId);
    const { rows } = await dbs.get('identity')!.query('SELECT 1 FROM projects WHERE id = $1', [t.projectId]);
    expect(rows).toEqual([]);
    for (const s of DATA_SERVICES) await expectUntouched(s, other.projectId, otherBefore[s]);
    expect((await api(other, 'GET', '/contacts')).body.total).toBeGreaterThan(0);
  }, 120_000);
});
