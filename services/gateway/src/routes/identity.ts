import type { Request, RequestHandler, Response, Router } from 'express';
import type { Client } from '@connectrpc/connect';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { type Authenticator, SESSION_COOKIE } from '../http/auth.js';
import type { LoginGuard } from '../http/login-guard.js';
import { sameOrigin, startedElsewhere } from '../http/same-origin.js';
import { PAGE_CSP_DIRECTIVES } from '../http/security-headers.js';
import { objectBody, stringField } from '../http/body.js';
import { invitationJson, memberJson, projectJson, roleValue, userJson, wipeJson } from './identity-json.js';
import { ProjectWipe } from './project-safety.js';
import { z } from 'zod';
import { ApiRouter, id, isoDate } from '../http/api.js';

const Role = z.enum(['owner', 'admin', 'member']);

const User = z
  .object({ id, email: z.string().email(), emailVerified: z.boolean(), createdAt: isoDate.nullable() })
  .openapi('User');
const Project = z
  .object({
    id,
    name: z.string(),
    publicKey: z.string().optional().openapi({ description: 'Only when just issued (creation, rotation)' }),
    secretKey: z.string().optional().openapi({ description: 'Only when just issued (creation, rotation)' }),
    publicKeyPrefix: z.string(),
    secretKeyPrefix: z.string(),
    disabled: z.boolean(),
    role: Role.nullable(),
    createdAt: isoDate.nullable(),
    updatedAt: isoDate.nullable(),
  })
  .openapi('Project');
const Member = z
  .object({ userId: id, email: z.string(), role: Role.nullable(), createdAt: isoDate.nullable() })
  .openapi('Member');
const Invitation = z
  .object({
    id,
    projectId: id,
    projectName: z.string(),
    email: z.string(),
    role: Role.nullable(),
    invitedBy: z.object({ userId: id, email: z.string() }).nullable(),
    status: z.enum(['pending', 'accepted', 'declined', 'revoked', 'expired']).nullable(),
    createdAt: isoDate.nullable(),
    expiresAt: isoDate.nullable(),
  })
  .openapi('Invitation');
const Credentials = z.object({ email: z.string().email(), password: z.string().min(8) });
const Ok = z.object({ success: z.literal(true) });
const PROJECT_ID = z.object({ id: id.openapi({ description: 'Project id' }) });

/** GET /auth/logout started by another site: a button that posts from this origin (no script: the CSP runs none). */
const LOGOUT_PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">' +
  '<title>Sign out</title></head><body><h1>Sign out?</h1>' +
  '<p>Another site sent you here. You stay signed in unless you confirm.</p>' +
  '<form method="post" action="/auth/logout"><button type="submit">Sign out</button></form></body></html>';

/** Session-authenticated user, project and member management (SPEC.md "User and project management"). */
export function identityRouter(
  identity: Client<typeof IdentityService>,
  auth: Authenticator,
  loginGuard: LoginGuard,
  signupBudget: RequestHandler,
): Router {
  const r = new ApiRouter();
  const session = auth.session();

  r.post(
    '/auth/signup',
    {
      summary: 'Create an account (and sign in: sets the session cookie)',
      tag: 'Account',
      auth: 'none',
      body: Credentials,
      responses: { 201: User },
      errors: [409, 429],
    },
    signupBudget,
    async (req, res) => {
      const body = objectBody(req.body);
      const out = await identity.signUp({
        email: stringField(body, 'email') ?? '',
        password: stringField(body, 'password') ?? '',
      });
      auth.setSession(res, out.sessionToken);
      res.status(201).json(userJson(out.user!));
    },
  );

  r.post(
    '/auth/login',
    {
      summary: 'Sign in: sets the session cookie',
      tag: 'Account',
      auth: 'none',
      body: Credentials,
      responses: { 200: User },
      errors: [401, 429],
    },
    async (req, res) => {
      const body = objectBody(req.body);
      // Password guessing and spraying: the guard's budgets (http/login-guard.ts). The email is keyed the way
      // identity compares it, so `A@x.com ` and `a@x.com` share one budget.
      const email = stringField(body, 'email') ?? '';
      const password = stringField(body, 'password') ?? '';
      const out = await loginGuard.attempt(req.ip, email, () => identity.login({ email, password }));
      auth.setSession(res, out.sessionToken);
      res.json(userJson(out.user!));
    },
  );

  const logout = async (req: Request, res: Response) => {
    const token = req.signedCookies?.[SESSION_COOKIE];
    if (typeof token === 'string' && token) await identity.logout({ sessionToken: token });
    auth.clearSession(res);
  };

  // A GET that changes something (SPEC.md keeps it): started by another site's page (a link, a script's
  // navigation, both carry the SameSite=Lax cookie), it only asks, and the form's same-origin POST signs out.
  r.get(
    '/auth/logout',
    {
      summary: 'Sign out: ends the session and clears the cookie (from another site: a page asking to confirm)',
      description:
        'A request another origin started (`Sec-Fetch-Site` cross-site or same-site; without it, an `Origin` or ' +
        '`Referer` of another origin) signs nobody out: it answers a page whose button POSTs /auth/logout.',
      tag: 'Account',
      auth: 'none',
      responses: {
        200: {
          description: '{success: true}; the confirmation page (HTML) when another site started the request',
          content: { 'application/json': Ok, 'text/html': z.string() },
        },
      },
    },
    async (req, res) => {
      if (startedElsewhere(req, auth.publicOrigin)) {
        res
          .status(200)
          .set('Cache-Control', 'no-store')
          .set('Content-Security-Policy', `default-src 'none'; ${PAGE_CSP_DIRECTIVES}`)
          .type('html')
          .send(LOGOUT_PAGE);
        return;
      }
      await logout(req, res);
      res.json({ success: true });
    },
  );

  r.post(
    '/auth/logout',
    {
      summary: 'Sign out: ends the session and clears the cookie',
      description:
        'Refused (403 CROSS_SITE_REQUEST) when sent by a page of another origin. A browser form post ' +
        '(Accept: text/html) is redirected (303) to the console sign-in page.',
      tag: 'Account',
      auth: 'none',
      responses: {
        200: Ok,
        303: { description: 'A form post: to /app/login', headers: { Location: 'The console sign-in page' } },
      },
      errors: [403],
    },
    sameOrigin(auth.publicOrigin),
    async (req, res) => {
      await logout(req, res);
      if (req.accepts(['json', 'html']) === 'html') return res.redirect(303, '/app/login');
      res.json({ success: true });
    },
  );

  r.get(
    '/auth/oauth-config',
    {
      summary: 'OAuth providers offered at sign-in',
      tag: 'Account',
      auth: 'none',
      responses: { 200: z.object({ providers: z.array(z.object({ id: z.string(), name: z.string() })) }) },
    },
    async (_req, res) => {
      const out = await identity.getOAuthConfig({});
      res.json({ providers: out.providers.map((p) => ({ id: p.id, name: p.name })) });
    },
  );

  // Account lifecycle (README "Account lifecycle"): mailed single-use tokens.
  r.post(
    '/auth/request-verification',
    {
      summary: 'Mail a verification link to the signed-in user',
      tag: 'Account',
      auth: 'session',
      responses: { 200: Ok },
      errors: [429],
    },
    session,
    async (req, res) => {
      await identity.requestEmailVerification({ userId: req.userId });
      res.json({ success: true });
    },
  );

  r.post(
    '/auth/verify-email',
    {
      summary: 'Verify the account email with the mailed token',
      tag: 'Account',
      auth: 'none',
      body: z.object({ token: z.string() }),
      responses: { 200: User },
      errors: [404],
    },
    async (req, res) => {
      const out = await identity.verifyEmail({ token: stringField(objectBody(req.body), 'token') ?? '' });
      res.json(userJson(out.user!));
    },
  );

  // Always 200: the answer never tells whether the address has an account.
  r.post(
    '/auth/request-password-reset',
    {
      summary: 'Mail a password reset link (always 200: never tells whether the account exists)',
      tag: 'Account',
      auth: 'none',
      body: z.object({ email: z.string().email() }),
      responses: { 200: Ok },
    },
    async (req, res) => {
      await identity.requestPasswordReset({ email: stringField(objectBody(req.body), 'email') ?? '' });
      res.json({ success: true });
    },
  );

  r.post(
    '/auth/reset-password',
    {
      summary: 'Set a new password with the mailed token',
      tag: 'Account',
      auth: 'none',
      body: z.object({ token: z.string(), password: z.string().min(8) }),
      responses: { 200: Ok },
      errors: [404],
    },
    async (req, res) => {
      const body = objectBody(req.body);
      await identity.resetPassword({
        token: stringField(body, 'token') ?? '',
        password: stringField(body, 'password') ?? '',
      });
      res.json({ success: true });
    },
  );

  r.get(
    '/users/@me',
    { summary: 'The signed-in user', tag: 'Account', auth: 'session', responses: { 200: User } },
    session,
    async (req, res) => {
      res.json(userJson((await identity.getUser({ userId: req.userId })).user!));
    },
  );

  r.get(
    '/users/@me/projects',
    {
      summary: "The signed-in user's projects",
      tag: 'Projects',
      auth: 'session',
      responses: { 200: z.array(Project) },
    },
    session,
    async (req, res) => {
      res.json((await identity.listProjects({ userId: req.userId })).projects.map(projectJson));
    },
  );

  r.post(
    '/users/@me/projects',
    {
      summary: 'Create a project (its keys are in this answer only)',
      tag: 'Projects',
      auth: 'session',
      body: z.object({ name: z.string().min(1) }),
      responses: { 201: Project },
    },
    session,
    async (req, res) => {
      const name = stringField(objectBody(req.body), 'name') ?? '';
      res
        .status(201)
        .json(
          projectJson(
            (await identity.createProject({ userId: req.userId, name, sessionToken: req.sessionToken })).project!,
          ),
        );
    },
  );

  r.patch(
    '/users/@me/projects/:id',
    {
      summary: 'Rename a project',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      body: z.object({ name: z.string().min(1).optional() }),
      responses: { 200: Project },
      errors: [403, 404],
    },
    session,
    async (req, res) => {
      const name = stringField(objectBody(req.body), 'name');
      const out = await identity.updateProject({ userId: req.userId, projectId: String(req.params.id), name });
      res.json(projectJson(out.project!));
    },
  );

  r.post(
    '/users/@me/projects/:id/regenerate-keys',
    {
      summary: "Rotate the project's keys (the new keys are in this answer only)",
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 200: Project },
      errors: [403, 404],
    },
    session,
    async (req, res) => {
      const { project } = await identity.regenerateKeys({ userId: req.userId, projectId: String(req.params.id) });
      await auth.forgetProject(project!.id);
      res.json(projectJson(project!));
    },
  );

  r.delete(
    '/users/@me/projects/:id',
    {
      summary: 'Delete a project: its keys and members at once, its data in every service (owner only)',
      description:
        'A saga (README "Project reset and deletion"): 202 with its progress, polled at ' +
        'GET /users/@me/projects/{id}/reset until that answers 404.',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 202: ProjectWipe },
      errors: [403, 404, 409],
    },
    session,
    async (req, res) => {
      const { wipe } = await identity.deleteProject({ userId: req.userId, projectId: String(req.params.id) });
      await auth.forgetProject(wipe!.projectId);
      res.status(202).json(wipeJson(wipe!));
    },
  );

  r.get(
    '/projects/:id/members',
    {
      summary: 'Members of a project',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 200: z.array(Member) },
      errors: [404],
    },
    session,
    async (req, res) => {
      res.json(
        (await identity.listMembers({ userId: req.userId, projectId: String(req.params.id) })).members.map(memberJson),
      );
    },
  );

  // Inviting, not adding: the invited user becomes a member only by accepting.
  r.post(
    '/projects/:id/members',
    {
      summary: 'Invite a member (they join by accepting)',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      body: z.object({ email: z.string().email(), role: Role.default('member') }),
      responses: { 201: Invitation },
      errors: [403, 404, 409],
    },
    session,
    async (req, res) => {
      const body = objectBody(req.body);
      const out = await identity.inviteMember({
        userId: req.userId,
        projectId: String(req.params.id),
        email: stringField(body, 'email') ?? '',
        role: roleValue(body.role ?? 'member'),
      });
      res.status(201).json(invitationJson(out.invitation!));
    },
  );

  r.get(
    '/projects/:id/invitations',
    {
      summary: 'Invitations of a project',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 200: z.array(Invitation) },
      errors: [403, 404],
    },
    session,
    async (req, res) => {
      const out = await identity.listInvitations({ userId: req.userId, projectId: String(req.params.id) });
      res.json(out.invitations.map(invitationJson));
    },
  );

  r.delete(
    '/projects/:id/invitations/:invitationId',
    {
      summary: 'Revoke an invitation',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 204: null },
      errors: [403, 404],
    },
    session,
    async (req, res) => {
      const ids = { projectId: String(req.params.id), invitationId: String(req.params.invitationId) };
      await identity.revokeInvitation({ userId: req.userId, ...ids });
      res.status(204).end();
    },
  );

  r.get(
    '/users/@me/invitations',
    {
      summary: 'Invitations addressed to the signed-in user',
      tag: 'Projects',
      auth: 'session',
      responses: { 200: z.array(Invitation) },
    },
    session,
    async (req, res) => {
      res.json((await identity.listMyInvitations({ userId: req.userId })).invitations.map(invitationJson));
    },
  );

  const answers = [
    ['accept', 'Accept', 'acceptInvitation'],
    ['decline', 'Decline', 'declineInvitation'],
  ] as const;
  for (const [verb, title, rpc] of answers) {
    r.post(
      `/users/@me/invitations/:invitationId/${verb}`,
      {
        summary: `${title} an invitation`,
        ...(verb === 'accept' ? { description: 'Only an account whose email address is verified accepts (403).' } : {}),
        tag: 'Projects',
        auth: 'session',
        responses: { 200: Invitation },
        errors: verb === 'accept' ? [403, 404, 409, 410] : [404, 410],
      },
      session,
      async (req, res) => {
        const out = await identity[rpc]({ userId: req.userId, invitationId: String(req.params.invitationId) });
        res.json(invitationJson(out.invitation!));
      },
    );
  }

  r.patch(
    '/projects/:id/members/:userId',
    {
      summary: "Change a member's role",
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      body: z.object({ role: Role }),
      responses: { 200: Member },
      errors: [403, 404],
    },
    session,
    async (req, res) => {
      const out = await identity.updateMember({
        userId: req.userId,
        projectId: String(req.params.id),
        memberUserId: String(req.params.userId),
        role: roleValue(objectBody(req.body).role),
      });
      res.json(memberJson(out.member!));
    },
  );

  r.delete(
    '/projects/:id/members/:userId',
    {
      summary: 'Remove a member',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 204: null },
      errors: [403, 404],
    },
    session,
    async (req, res) => {
      await identity.removeMember({
        userId: req.userId,
        projectId: String(req.params.id),
        memberUserId: String(req.params.userId),
      });
      res.status(204).end();
    },
  );

  return r.router;
}
