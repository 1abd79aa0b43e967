import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { call, expectEnvelope, newTenant, platform, signUp, uniqueEmail, type Tenant } from './support/client.js';
import { signUpVerified, verifyAddress } from './support/messaging.js';

type User = Awaited<ReturnType<typeof signUp>>;
type Who = Tenant | User;

const get = (path: string, who: Who) => call('GET', path, undefined, { cookie: who.cookie });
const del = (path: string, who: Who) => call('DELETE', path, undefined, { cookie: who.cookie });
const patchRole = (path: string, role: string, who: Who) => call('PATCH', path, { role }, { cookie: who.cookie });

const invite = (who: Who, projectId: string, email: string, role?: string) =>
  call('POST', `/projects/${projectId}/members`, { email, ...(role ? { role } : {}) }, { cookie: who.cookie });

const answer = (user: User, invitationId: string, verb: 'accept' | 'decline') =>
  call('POST', `/users/@me/invitations/${invitationId}/${verb}`, undefined, { cookie: user.cookie });

const DENIED = [403, 'PROJECT_ACCESS_DENIED'] as const;
const NOT_FOUND = [404, 'RESOURCE_NOT_FOUND'] as const;
const GONE = [410, 'INVITATION_GONE'] as const;

/** Invites `user` and has them accept: the only way into a project. */
async function join(inviter: Who, projectId: string, user: User, role: string): Promise<void> {
  const invited = await invite(inviter, projectId, user.email, role);
  expect(invited.status).toBe(201);
  expect((await answer(user, invited.body.id, 'accept')).status).toBe(200);
}

/** userId -> role of the project's members, as its owner sees them. */
async function rolesOf(t: Tenant): Promise<Record<string, string>> {
  const members: { userId: string; role: string }[] = (await get(`/projects/${t.projectId}/members`, t)).body;
  return Object.fromEntries(members.map((m) => [m.userId, m.role]));
}

describe('project invitations through the gateway', () => {
  test('inviting creates a pending invitation; the user joins only by accepting it', async () => {
    const t = await newTenant();
    const owner = await get('/users/@me', t);
    const user = await signUp();
    const invited = await invite(t, t.projectId, ` ${user.email.toUpperCase()} `, 'admin');
    expect(invited.status).toBe(201);
    expect(invited.body).toEqual({
      id: expect.any(String),
      projectId: t.projectId,
      projectName: 'Test project',
      email: user.email,
      role: 'admin',
      invitedBy: { userId: t.userId, email: owner.body.email },
      status: 'pending',
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
    });
    const days = (Date.parse(invited.body.expiresAt) - Date.parse(invited.body.createdAt)) / 86_400_000;
    expect(days).toBeCloseTo(7, 3);

    // Not a member yet: the project stays invisible to the invited user.
    expect(await rolesOf(t)).toEqual({ [t.userId]: 'owner' });
    expect((await get('/users/@me/projects', user)).body).toEqual([]);
    expectEnvelope(await get(`/projects/${t.projectId}/members`, user), ...NOT_FOUND);

    expect((await get(`/projects/${t.projectId}/invitations`, t)).body).toEqual([invited.body]);
    expect((await get('/users/@me/invitations', user)).body).toEqual([invited.body]);
    expectEnvelope(await invite(t, t.projectId, user.email, 'member'), 409, 'CONFLICT');

    // Anyone can sign up with an address they do not hold: only a verified address accepts.
    expectEnvelope(await answer(user, invited.body.id, 'accept'), 403, 'EMAIL_NOT_VERIFIED');
    expect(await rolesOf(t)).toEqual({ [t.userId]: 'owner' });
    expect((await get('/users/@me/invitations', user)).body).toEqual([invited.body]);
    await verifyAddress(user);
    const accepted = await answer(user, invited.body.id, 'accept');
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ id: invited.body.id, status: 'accepted', role: 'admin' });
    expect(await rolesOf(t)).toEqual({ [t.userId]: 'owner', [user.userId]: 'admin' });
    expect((await get('/users/@me/projects', user)).body).toMatchObject([{ id: t.projectId, role: 'admin' }]);

    expect((await get('/users/@me/invitations', user)).body).toEqual([]);
    expect((await get(`/projects/${t.projectId}/invitations`, t)).body).toEqual([]);
    expectEnvelope(await answer(user, invited.body.id, 'accept'), ...GONE);
    expectEnvelope(await invite(t, t.projectId, user.email, 'member'), 409, 'CONFLICT');
  });

  test('bad invitations are refused and change nothing', async () => {
    const t = await newTenant();
    expectEnvelope(await invite(t, t.projectId, uniqueEmail()), 404, 'USER_NOT_FOUND');
    expectEnvelope(await invite(t, t.projectId, 'not-an-email'), 422, 'VALIDATION_ERROR');
    const user = await signUp();
    expectEnvelope(await invite(t, t.projectId, user.email, 'owner'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await invite(t, t.projectId, user.email, 'boss'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await invite(user, t.projectId, user.email), ...NOT_FOUND);
    expect((await get(`/projects/${t.projectId}/invitations`, t)).body).toEqual([]);
    expect((await get('/users/@me/invitations', user)).body).toEqual([]);
  });

  test('declined and revoked invitations cannot be accepted; a new invitation can follow', async () => {
    const t = await newTenant();
    const user = await signUp();
    const first = await invite(t, t.projectId, user.email);
    expect(first.body.role).toBe('member');
    const declined = await answer(user, first.body.id, 'decline');
    expect(declined.body).toMatchObject({ id: first.body.id, status: 'declined' });
    const late = await answer(user, first.body.id, 'accept');
    expectEnvelope(late, ...GONE);
    expect(late.body.error.details).toMatchObject({ status: 'declined' });

    const second = await invite(t, t.projectId, user.email);
    expect(second.status).toBe(201);
    const revokePath = `/projects/${t.projectId}/invitations/${second.body.id}`;
    expect((await del(revokePath, t)).status).toBe(204);
    expect((await get('/users/@me/invitations', user)).body).toEqual([]);
    const revoked = await answer(user, second.body.id, 'accept');
    expectEnvelope(revoked, ...GONE);
    expect(revoked.body.error.details).toMatchObject({ status: 'revoked' });
    expectEnvelope(await answer(user, second.body.id, 'decline'), ...GONE);
    expectEnvelope(await del(revokePath, t), ...GONE);
    expect(await rolesOf(t)).toEqual({ [t.userId]: 'owner' });
  });

  test('an expired invitation cannot be accepted and no longer blocks a new one', async () => {
    const t = await newTenant();
    const user = await signUp();
    const invited = await invite(t, t.projectId, user.email);
    // Seven days pass: move the expiry into the past in the identity service's own database.
    const url = serviceDatabaseUrl('identity', platform.env.DATABASE_URL, platform.env);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const lapse = `UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1`;
      await db.query(lapse, [invited.body.id]);
    } finally {
      await db.end();
    }
    expect((await get('/users/@me/invitations', user)).body).toEqual([]);
    expect((await get(`/projects/${t.projectId}/invitations`, t)).body).toEqual([]);
    const expired = await answer(user, invited.body.id, 'accept');
    expectEnvelope(expired, ...GONE);
    expect(expired.body.error.details).toMatchObject({ status: 'expired' });
    expect(await rolesOf(t)).toEqual({ [t.userId]: 'owner' });
    expect((await invite(t, t.projectId, user.email)).status).toBe(201);
  });

  test('only the invited user sees and answers an invitation; members cannot list or revoke', async () => {
    const t = await newTenant();
    const member = await signUpVerified();
    await join(t, t.projectId, member, 'member');
    const user = await signUpVerified();
    const invited = await invite(t, t.projectId, user.email);
    const stranger = await signUp();
    expect((await get('/users/@me/invitations', stranger)).body).toEqual([]);
    expectEnvelope(await answer(stranger, invited.body.id, 'accept'), ...NOT_FOUND);
    expectEnvelope(await answer(stranger, 'not-a-uuid', 'decline'), ...NOT_FOUND);
    expectEnvelope(await answer(member, invited.body.id, 'accept'), ...NOT_FOUND);
    expectEnvelope(await invite(member, t.projectId, stranger.email), ...DENIED);
    expectEnvelope(await get(`/projects/${t.projectId}/invitations`, member), ...DENIED);
    const revokePath = `/projects/${t.projectId}/invitations/${invited.body.id}`;
    expectEnvelope(await del(revokePath, member), ...DENIED);
    expectEnvelope(await del(revokePath, stranger), ...NOT_FOUND);
    const other = await newTenant();
    expectEnvelope(await del(`/projects/${other.projectId}/invitations/${invited.body.id}`, other), ...NOT_FOUND);
    expect((await answer(user, invited.body.id, 'accept')).status).toBe(200);
  });

  test('admins manage members only: they cannot invite, promote, demote or remove admins', async () => {
    const t = await newTenant();
    const [admin, otherAdmin, member] = [await signUpVerified(), await signUpVerified(), await signUpVerified()];
    await join(t, t.projectId, admin, 'admin');
    await join(t, t.projectId, otherAdmin, 'admin');
    await join(admin, t.projectId, member, 'member');
    const before = { [t.userId]: 'owner', [admin.userId]: 'admin', [otherAdmin.userId]: 'admin' };
    before[member.userId] = 'member';
    expect(await rolesOf(t)).toEqual(before);

    const outsider = await signUp();
    expectEnvelope(await invite(admin, t.projectId, outsider.email, 'admin'), ...DENIED);
    const members = `/projects/${t.projectId}/members`;
    // The demotion hole: removing another admin (to re-invite them as a member) is refused.
    expectEnvelope(await del(`${members}/${otherAdmin.userId}`, admin), ...DENIED);
    expectEnvelope(await patchRole(`${members}/${otherAdmin.userId}`, 'member', admin), ...DENIED);
    expectEnvelope(await patchRole(`${members}/${member.userId}`, 'admin', admin), ...DENIED);
    expectEnvelope(await del(`${members}/${t.userId}`, admin), ...DENIED);
    expect(await rolesOf(t)).toEqual(before);

    // Nor can an admin revoke the owner's admin invitation.
    const adminInvite = await invite(t, t.projectId, outsider.email, 'admin');
    expectEnvelope(await del(`/projects/${t.projectId}/invitations/${adminInvite.body.id}`, admin), ...DENIED);
    expect((await get(`/projects/${t.projectId}/invitations`, admin)).body).toHaveLength(1);

    // What admins may do: remove members, and leave; the owner manages admins.
    expect((await del(`${members}/${member.userId}`, admin)).status).toBe(204);
    expect((await del(`${members}/${admin.userId}`, admin)).status).toBe(204);
    const demoted = await patchRole(`${members}/${otherAdmin.userId}`, 'member', t);
    expect(demoted.body).toMatchObject({ userId: otherAdmin.userId, role: 'member' });
    expect((await del(`${members}/${otherAdmin.userId}`, t)).status).toBe(204);
    expect(await rolesOf(t)).toEqual({ [t.userId]: 'owner' });
  });

  test('any member lists the members; members manage nothing; nobody changes the owner', async () => {
    const t = await newTenant();
    const member = await signUpVerified();
    await join(t, t.projectId, member, 'member');
    const members = `/projects/${t.projectId}/members`;
    expect((await get(members, member)).body.map((m: { role: string }) => m.role).sort()).toEqual(['member', 'owner']);
    expectEnvelope(await patchRole(`${members}/${t.userId}`, 'member', member), ...DENIED);
    const rotate = `/users/@me/projects/${t.projectId}/regenerate-keys`;
    expectEnvelope(await call('POST', rotate, undefined, { cookie: member.cookie }), ...DENIED);
    expectEnvelope(await patchRole(`${members}/${member.userId}`, 'owner', t), 422, 'VALIDATION_ERROR');
    expectEnvelope(await del(`${members}/${t.userId}`, t), ...DENIED);
    expect((await del(`${members}/${member.userId}`, member)).status).toBe(204);
    expectEnvelope(await get(members, member), ...NOT_FOUND);
  });
});
