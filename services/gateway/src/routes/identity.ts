import { Router, type RequestHandler } from 'express';
import { accountEmailKey } from '@svc/lib/account-email';
import { AppError } from '@svc/lib/errors';
import type { RateLimiter } from '@svc/lib/rate-limit';
import type { Client } from '@connectrpc/connect';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import type { Authenticator } from '../http/auth.js';
import { objectBody, stringField } from '../http/body.js';
import { invitationJson, memberJson, projectJson, roleValue, userJson } from './identity-json.js';

const LOGIN_ATTEMPTS_PER_MINUTE = 10;

/** Session-authenticated user, project and member management (SPEC.md "User and project management"). */
export function identityRouter(
  identity: Client<typeof IdentityService>,
  auth: Authenticator,
  limiter: RateLimiter,
): Router {
  const r = Router();
  const session = auth.session();

  // Password guessing: a few attempts per minute for one account from one client. The email is keyed
  // the way identity compares it, so `A@x.com ` and `a@x.com` share one budget.
  const loginThrottle: RequestHandler = async (req, _res, next) => {
    const email = accountEmailKey(String(objectBody(req.body).email ?? ''));
    const d = await limiter.hit(`login:${req.ip}:${email}`, LOGIN_ATTEMPTS_PER_MINUTE, 60_000);
    if (!d.allowed) {
      throw new AppError({
        code: 'RATE_LIMIT_EXCEEDED',
        status: 429,
        message: 'Too many login attempts; try again later',
        details: { retryAfter: d.retryAfter },
      });
    }
    next();
  };

  r.post('/auth/signup', async (req, res) => {
    const body = objectBody(req.body);
    const out = await identity.signUp({
      email: stringField(body, 'email') ?? '',
      password: stringField(body, 'password') ?? '',
    });
    auth.setSession(res, out.sessionToken);
    res.status(201).json(userJson(out.user!));
  });

  r.post('/auth/login', loginThrottle, async (req, res) => {
    const body = objectBody(req.body);
    const out = await identity.login({
      email: stringField(body, 'email') ?? '',
      password: stringField(body, 'password') ?? '',
    });
    auth.setSession(res, out.sessionToken);
    res.json(userJson(out.user!));
  });

  r.get('/auth/logout', async (req, res) => {
    const token = req.signedCookies?.svc_session;
    if (typeof token === 'string' && token) await identity.logout({ sessionToken: token });
    auth.clearSession(res);
    res.json({ success: true });
  });

  r.get('/auth/oauth-config', async (_req, res) => {
    const out = await identity.getOAuthConfig({});
    res.json({ providers: out.providers.map((p) => ({ id: p.id, name: p.name })) });
  });

  // Account lifecycle (README "Account lifecycle"): mailed single-use tokens.
  r.post('/auth/request-verification', session, async (req, res) => {
    await identity.requestEmailVerification({ userId: req.userId });
    res.json({ success: true });
  });

  r.post('/auth/verify-email', async (req, res) => {
    const out = await identity.verifyEmail({ token: stringField(objectBody(req.body), 'token') ?? '' });
    res.json(userJson(out.user!));
  });

  // Always 200: the answer never tells whether the address has an account.
  r.post('/auth/request-password-reset', async (req, res) => {
    await identity.requestPasswordReset({ email: stringField(objectBody(req.body), 'email') ?? '' });
    res.json({ success: true });
  });

  r.post('/auth/reset-password', async (req, res) => {
    const body = objectBody(req.body);
    await identity.resetPassword({
      token: stringField(body, 'token') ?? '',
      password: stringField(body, 'password') ?? '',
    });
    res.json({ success: true });
  });

  r.get('/users/@me', session, async (req, res) => {
    res.json(userJson((await identity.getUser({ userId: req.userId })).user!));
  });

  r.get('/users/@me/projects', session, async (req, res) => {
    res.json((await identity.listProjects({ userId: req.userId })).projects.map(projectJson));
  });

  r.post('/users/@me/projects', session, async (req, res) => {
    const name = stringField(objectBody(req.body), 'name') ?? '';
    res.status(201).json(projectJson((await identity.createProject({ userId: req.userId, name })).project!));
  });

  r.patch('/users/@me/projects/:id', session, async (req, res) => {
    const name = stringField(objectBody(req.body), 'name');
    const out = await identity.updateProject({ userId: req.userId, projectId: String(req.params.id), name });
    res.json(projectJson(out.project!));
  });

  r.post('/users/@me/projects/:id/regenerate-keys', session, async (req, res) => {
    res.json(
      projectJson((await identity.regenerateKeys({ userId: req.userId, projectId: String(req.params.id) })).project!),
    );
  });

  r.delete('/users/@me/projects/:id', session, async (req, res) => {
    await identity.deleteProject({ userId: req.userId, projectId: String(req.params.id) });
    res.status(204).end();
  });

  r.get('/projects/:id/members', session, async (req, res) => {
    res.json(
      (await identity.listMembers({ userId: req.userId, projectId: String(req.params.id) })).members.map(memberJson),
    );
  });

  // Inviting, not adding: the invited user becomes a member only by accepting.
  r.post('/projects/:id/members', session, async (req, res) => {
    const body = objectBody(req.body);
    const out = await identity.inviteMember({
      userId: req.userId,
      projectId: String(req.params.id),
      email: stringField(body, 'email') ?? '',
      role: roleValue(body.role ?? 'member'),
    });
    res.status(201).json(invitationJson(out.invitation!));
  });

  r.get('/projects/:id/invitations', session, async (req, res) => {
    const out = await identity.listInvitations({ userId: req.userId, projectId: String(req.params.id) });
    res.json(out.invitations.map(invitationJson));
  });

  r.delete('/projects/:id/invitations/:invitationId', session, async (req, res) => {
    const ids = { projectId: String(req.params.id), invitationId: String(req.params.invitationId) };
    await identity.revokeInvitation({ userId: req.userId, ...ids });
    res.status(204).end();
  });

  r.get('/users/@me/invitations', session, async (req, res) => {
    res.json((await identity.listMyInvitations({ userId: req.userId })).invitations.map(invitationJson));
  });

  r.post('/users/@me/invitations/:invitationId/accept', session, async (req, res) => {
    const out = await identity.acceptInvitation({ userId: req.userId, invitationId: String(req.params.invitationId) });
    res.json(invitationJson(out.invitation!));
  });

  r.post('/users/@me/invitations/:invitationId/decline', session, async (req, res) => {
    const out = await identity.declineInvitation({ userId: req.userId, invitationId: String(req.params.invitationId) });
    res.json(invitationJson(out.invitation!));
  });

  r.patch('/projects/:id/members/:userId', session, async (req, res) => {
    const out = await identity.updateMember({
      userId: req.userId,
      projectId: String(req.params.id),
      memberUserId: String(req.params.userId),
      role: roleValue(objectBody(req.body).role),
    });
    res.json(memberJson(out.member!));
  });

  r.delete('/projects/:id/members/:userId', session, async (req, res) => {
    await identity.removeMember({
      userId: req.userId,
      projectId: String(req.params.id),
      memberUserId: String(req.params.userId),
    });
    res.status(204).end();
  });

  return r;
}
