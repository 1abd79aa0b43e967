import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { call, eventually, expectEnvelope, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { signUpVerified, verifiedDomain, waitForMail } from './support/messaging.js';

// A project's sending reputation: bounce and complaint rates from its own mail, the automatic
// suspension when a rate reaches its threshold, what a suspended project can no longer send, and
// the owner's reinstatement.

const security = (t: { cookie: string }, projectId: string, path = `/projects/${projectId}/security`) =>
  call('GET', path, undefined, { cookie: t.cookie });

const hook = (body: unknown) =>
  call('POST', '/webhooks/generic', body, { headers: { 'x-webhook-secret': platform.env.WEBHOOK_SECRET } });

async function join(t: Tenant, role: string): Promise<{ cookie: string }> {
  const user = await signUpVerified();
  const invited = await call('POST', `/projects/${t.projectId}/members`, { email: user.email, role }, t);
  expect(invited.status).toBe(201);
  expect((await call('POST', `/users/@me/invitations/${invited.body.id}/accept`, undefined, user)).status).toBe(200);
  return user;
}

/** The subjects identity wrote to its outbox about the project (suspension messages on the bus). */
async function identityMessages(projectId: string): Promise<string[]> {
  const db = new pg.Client({
    connectionString: serviceDatabaseUrl('identity', platform.env.DATABASE_URL, platform.env),
  });
  await db.connect();
  try {
    const { rows } = await db.query<{ subject: string }>(
      "SELECT subject FROM outbox WHERE payload->>'projectId' = $1 ORDER BY id",
      [projectId],
    );
    return rows.map((r) => r.subject);
  } finally {
    await db.end();
  }
}

describe('project security and suspension', () => {
  test('the security state: rates, thresholds and history; members only', async () => {
    const t = await newTenant();
    const fresh = await security(t, t.projectId);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toEqual({
      projectId: t.projectId,
      status: 'active',
      suspension: null,
      thresholds: { bounceRate: 0.05, complaintRate: 0.003, minimumVolume: 100, judgedWindowDays: 7 },
      windows: [
        { days: 7, sent: 0, bounced: 0, complained: 0, bounceRate: 0, complaintRate: 0 },
        { days: 30, sent: 0, bounced: 0, complained: 0, bounceRate: 0, complaintRate: 0 },
      ],
      suspensions: [],
    });
    expect((await security(t, t.projectId, `/users/@me/projects/${t.projectId}/security`)).body).toEqual(fresh.body);
    const member = await join(t, 'member');
    expect((await security(member, t.projectId)).body.status).toBe('active');

    const other = await newTenant();
    for (const path of [`/projects/${t.projectId}/security`, `/users/@me/projects/${t.projectId}/security`]) {
      expectEnvelope(await security(other, t.projectId, path), 404, 'RESOURCE_NOT_FOUND');
      expectEnvelope(await call('GET', path), 401, 'UNAUTHORIZED');
    }
    expectEnvelope(await security(t, 'not-a-uuid'), 404, 'RESOURCE_NOT_FOUND');
    expectEnvelope(
      await call('POST', `/users/@me/projects/${t.projectId}/security/reinstate`, undefined, t),
      409,
      'CONFLICT',
    );
  });

  test('a complaint rate reaching 0.3 % suspends sending; the owner reinstates it', async () => {
    const t = await newTenant();
    const { domain } = await verifiedDomain(t);
    const from = `news@${domain}`;
    const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: t.secretKey });

    // A workflow that mails whoever tracks its event, and a campaign draft, both ready before the suspension.
    const event = `joined-${Date.now().toString(36)}`;
    const w = await api('POST', '/workflows', { name: 'Welcome', eventName: event });
    const mail = await api('POST', `/workflows/${w.body.id}/steps`, {
      type: 'SEND_EMAIL',
      config: { subject: 'Welcome', body: '<p>welcome</p>', from },
    });
    expect(mail.status).toBe(201);
    const edge = { fromStepId: w.body.steps[0].id, toStepId: mail.body.id };
    expect((await api('POST', `/workflows/${w.body.id}/transitions`, edge)).status).toBe(201);
    expect((await api('PATCH', `/workflows/${w.body.id}`, { enabled: true })).status).toBe(200);
    const campaign = await api('POST', '/campaigns', { name: 'News', subject: 'News', body: '<p>news</p>', from });
    expect(campaign.status).toBe(201);

    // 100 emails (the minimum volume), all accepted by the receiving server.
    const emailIds: string[] = [];
    for (let batch = 0; batch < 2; batch++) {
      const to = Array.from({ length: 50 }, () => uniqueEmail('rep'));
      const sent = await api('POST', '/v1/send', { to, from, subject: 'Hello', body: '<p>hello</p>' });
      expect(sent.status).toBe(200);
      emailIds.push(...sent.body.data.emails.map((e: { email: string }) => e.email));
    }
    await eventually(
      async () => ((await security(t, t.projectId)).body.windows[0].sent === 100 ? true : undefined),
      30_000,
      '100 emails sent',
    );
    expect((await security(t, t.projectId)).body.status).toBe('active');

    // One complaint in 100: 1 % reaches the 0.3 % threshold.
    expect((await hook({ type: 'complaint', emailId: emailIds[7] })).body).toMatchObject({ processed: 1 });
    const suspended = await eventually(
      async () => {
        const res = await security(t, t.projectId);
        return res.body.status === 'suspended' ? res.body : undefined;
      },
      15_000,
      'suspension',
    );
    expect(suspended.suspension).toMatchObject({
      metric: 'complaint_rate',
      rate: 0.01,
      threshold: 0.003,
      sent: 100,
      reason: 'complaint rate 1.00 % of 100 emails reached the 0.30 % limit',
      liftedAt: null,
    });
    expect(new Date(suspended.suspension.suspendedAt).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(suspended.suspensions).toEqual([suspended.suspension]);
    expect(suspended.windows[0]).toMatchObject({ sent: 100, complained: 1, complaintRate: 0.01 });

    // Nothing leaves a suspended project: /v1/send, a campaign's start and test, a workflow's SEND_EMAIL.
    const refused = await api('POST', '/v1/send', { to: uniqueEmail('x'), from, subject: 'Hi', body: '<p>x</p>' });
    expectEnvelope(refused, 403, 'PROJECT_SUSPENDED');
    expect(refused.body.error.message).toContain('complaint rate 1.00 %');
    expect(refused.body.error.details).toMatchObject({ metric: 'complaint_rate', reason: suspended.suspension.reason });
    expectEnvelope(await api('POST', `/campaigns/${campaign.body.data.id}/send`, {}), 403, 'PROJECT_SUSPENDED');
    expect((await api('GET', `/campaigns/${campaign.body.data.id}`)).body.status).toBe('DRAFT');
    expectEnvelope(
      await api('POST', `/campaigns/${campaign.body.data.id}/test`, { email: uniqueEmail('t') }),
      403,
      'PROJECT_SUSPENDED',
    );
    const tracked = await call('POST', '/v1/track', { email: uniqueEmail('wf'), event }, { key: t.publicKey });
    expect(tracked.status).toBe(200);
    const failed = await eventually(async () => {
      const list = (await api('GET', `/workflows/${w.body.id}/executions`)).body.data as {
        status: string;
        error?: string;
      }[];
      return list.length === 1 && list[0].status === 'FAILED' ? list[0] : undefined;
    });
    expect(failed.error).toContain('Sending is suspended for this project');

    // Only the owner reinstates; the project sends again and the history keeps the suspension.
    const admin = await join(t, 'admin');
    const reinstate = (who: { cookie: string }) =>
      call('POST', `/users/@me/projects/${t.projectId}/security/reinstate`, undefined, who);
    expectEnvelope(await reinstate(admin), 403, 'PROJECT_ACCESS_DENIED');
    expectEnvelope(await reinstate(await newTenant()), 404, 'RESOURCE_NOT_FOUND');
    const lifted = await reinstate(t);
    expect(lifted.status).toBe(200);
    expect(lifted.body).toMatchObject({ status: 'active', suspension: null });
    expect(lifted.body.suspensions).toEqual([
      { ...suspended.suspension, liftedAt: expect.any(String), liftedBy: t.userId },
    ]);
    // Messaging drops its cached view when identity.project.reinstated reaches it (moments after the answer).
    const to = uniqueEmail('after');
    await eventually(async () => {
      const res = await api('POST', '/v1/send', { to, from, subject: 'Back', body: '<p>back</p>' });
      return res.status === 200 ? true : undefined;
    });
    await waitForMail(to);
    expectEnvelope(await reinstate(t), 409, 'CONFLICT');

    // Both moves were messages on the bus, written by identity with the state change.
    expect(await identityMessages(t.projectId)).toEqual(
      expect.arrayContaining(['identity.project.suspended', 'identity.project.reinstated']),
    );
  }, 90_000);

  test('bounces refused at SMTP time count: 5 in 100 suspend sending', async () => {
    const t = await newTenant();
    const { domain } = await verifiedDomain(t);
    const send = (to: string[]) =>
      call('POST', '/v1/send', { to, from: `hi@${domain}`, subject: 'Hi', body: '<p>hi</p>' }, { key: t.secretKey });
    for (const n of [50, 45]) expect((await send(Array.from({ length: n }, () => uniqueEmail('ok')))).status).toBe(200);
    await eventually(
      async () => ((await security(t, t.projectId)).body.windows[0].sent === 95 ? true : undefined),
      30_000,
      '95 emails sent',
    );
    // The test SMTP server answers 550 to bounce-* recipients.
    const bouncing = Array.from({ length: 5 }, (_, i) => `bounce-${i}-${uniqueEmail('b')}`);
    expect((await send(bouncing)).status).toBe(200);
    const suspended = await eventually(
      async () => {
        const res = await security(t, t.projectId);
        return res.body.status === 'suspended' ? res.body : undefined;
      },
      30_000,
      'suspension',
    );
    expect(suspended.suspension).toMatchObject({ metric: 'bounce_rate', rate: 0.05, threshold: 0.05, sent: 100 });
    expect(suspended.windows[0]).toMatchObject({ sent: 100, bounced: 5, bounceRate: 0.05 });
    expectEnvelope(await send([uniqueEmail('late')]), 403, 'PROJECT_SUSPENDED');
  }, 90_000);
});
