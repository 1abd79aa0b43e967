import { call, eventually, expectEnvelope, newTenant, uniqueEmail, type Tenant } from './support/client.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';

// GET /projects/{id}/setup-state: the onboarding checklist of a project, read by its members with a session.

const KEYS = ['hasVerifiedDomain', 'hasTemplate', 'hasContacts', 'hasTrackedEvent', 'hasSentEmail'];

const state = (t: Tenant, projectId = t.projectId) =>
  call('GET', `/projects/${projectId}/setup-state`, undefined, { cookie: t.cookie });

const doneOf = (body: { steps: { key: string; done: boolean }[] }) =>
  Object.fromEntries(body.steps.map((s) => [s.key, s.done]));

describe('GET /projects/{id}/setup-state', () => {
  test('a fresh project has done nothing; each step becomes done as the project takes it', async () => {
    const t = await newTenant();
    const fresh = await state(t);
    expect(fresh.status).toBe(200);
    expect(fresh.body.projectId).toBe(t.projectId);
    expect(fresh.body.complete).toBe(false);
    expect(fresh.body.steps.map((s: { key: string }) => s.key)).toEqual(KEYS);
    for (const s of fresh.body.steps) {
      expect(s.done).toBe(false);
      expect(typeof s.next).toBe('string');
      expect(s.next.length).toBeGreaterThan(0);
    }

    const to = uniqueEmail('setup');
    expect((await call('POST', '/contacts', { email: to }, { key: t.secretKey })).status).toBe(201);
    expect(doneOf((await state(t)).body)).toMatchObject({ hasContacts: true, hasTrackedEvent: false });

    const tracked = await call('POST', '/v1/track', { event: 'signed-up', email: to }, { key: t.publicKey });
    expect(tracked.status).toBe(200);
    await eventually(async () => (doneOf((await state(t)).body).hasTrackedEvent ? true : undefined));

    const { domain } = await verifiedDomain(t);
    expect(doneOf((await state(t)).body)).toMatchObject({ hasVerifiedDomain: true, hasTemplate: false });

    const template = await call(
      'POST',
      '/templates',
      { name: 'Welcome', subject: 'Welcome', body: '<p>hi</p>', from: `hi@${domain}`, type: 'TRANSACTIONAL' },
      { key: t.secretKey },
    );
    expect(template.status).toBe(201);
    expect(doneOf((await state(t)).body)).toMatchObject({ hasTemplate: true, hasSentEmail: false });

    const sent = await call(
      'POST',
      '/v1/send',
      { to, from: `hi@${domain}`, subject: 'Hello', body: '<p>hello</p>' },
      { key: t.secretKey },
    );
    expect(sent.status).toBe(200);
    await waitForMail(to);
    const done = await eventually(async () => {
      const res = await state(t);
      return res.body.complete ? res.body : undefined;
    });
    expect(done.steps.every((s: { done: boolean }) => s.done)).toBe(true);
  });

  test("another user's project is refused, without a session it is 401", async () => {
    const owner = await newTenant();
    const other = await newTenant();
    expectEnvelope(await state(other, owner.projectId), 404, 'RESOURCE_NOT_FOUND');
    expectEnvelope(await state(other, 'not-a-uuid'), 404, 'RESOURCE_NOT_FOUND');
    const anonymous = await call('GET', `/projects/${owner.projectId}/setup-state`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ success: false });
    // An API key is not a session.
    const withKey = await call('GET', `/projects/${owner.projectId}/setup-state`, undefined, { key: owner.secretKey });
    expect(withKey.status).toBe(401);
  });
});
