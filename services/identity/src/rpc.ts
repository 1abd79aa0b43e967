import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter } from '@connectrpc/connect';
import { validationError } from '@svc/lib/errors';
import { BillingAccountSchema, type BillingLimits } from '@svc/proto/svc/identity/v1/billing_pb';
import {
  IdentityService,
  InvitationSchema,
  InvitationStatus,
  KeyType,
  MemberSchema,
  ProjectSchema,
  ProjectWipeSchema,
  Role as ProtoRole,
  SuspensionSchema,
  UserSchema,
} from '@svc/proto/svc/identity/v1/identity_pb';
import type { AccountLifecycle } from './domain/account-lifecycle.js';
import type { Billing, Limits } from './domain/billing.js';
import type { Identity, ProjectView } from './domain/identity.js';
import type { Invitations } from './domain/invitations.js';
import type { ProjectWipes, WipeView } from './domain/project-wipes.js';
import type { Suspensions } from './domain/suspensions.js';
import type { OAuth } from './domain/oauth.js';
import type { Role } from './domain/roles.js';
import type { MemberRow, UserRow } from './store/identity-store.js';
import type { InvitationRow, InvitationStatus as Status } from './store/invitations-store.js';
import type { SuspensionRow } from './store/suspensions-store.js';

const ROLE_TO_PROTO: Record<Role, ProtoRole> = {
  owner: ProtoRole.OWNER,
  admin: ProtoRole.ADMIN,
  member: ProtoRole.MEMBER,
};

const STATUS_TO_PROTO: Record<Status, InvitationStatus> = {
  pending: InvitationStatus.PENDING,
  accepted: InvitationStatus.ACCEPTED,
  declined: InvitationStatus.DECLINED,
  revoked: InvitationStatus.REVOKED,
  expired: InvitationStatus.EXPIRED,
};

function roleFromProto(role: ProtoRole, field = 'role'): Exclude<Role, 'owner'> {
  const found = (Object.keys(ROLE_TO_PROTO) as Role[]).find((r) => ROLE_TO_PROTO[r] === role);
  if (!found || found === 'owner') {
    throw validationError([{ field, message: 'Role must be admin or member', code: 'invalid_enum_value' }]);
  }
  return found;
}

const user = (u: UserRow) =>
  create(UserSchema, {
    id: u.id,
    email: u.email,
    emailVerified: u.email_verified,
    createdAt: timestampFromDate(u.created_at),
  });

const project = (p: ProjectView) =>
  create(ProjectSchema, {
    id: p.id,
    name: p.name,
    publicKey: p.keys?.publicKey ?? '',
    secretKey: p.keys?.secretKey ?? '',
    publicKeyPrefix: p.public_key_prefix,
    secretKeyPrefix: p.secret_key_prefix,
    disabled: p.disabled,
    role: p.role ? ROLE_TO_PROTO[p.role] : ProtoRole.UNSPECIFIED,
    createdAt: timestampFromDate(p.created_at),
    updatedAt: timestampFromDate(p.updated_at),
  });

const member = (m: MemberRow) =>
  create(MemberSchema, {
    userId: m.user_id,
    email: m.email,
    role: ROLE_TO_PROTO[m.role],
    createdAt: timestampFromDate(m.created_at),
  });

const invitation = (i: InvitationRow) =>
  create(InvitationSchema, {
    id: i.id,
    projectId: i.project_id,
    projectName: i.project_name,
    email: i.email,
    role: ROLE_TO_PROTO[i.role],
    invitedByUserId: i.invited_by ?? '',
    invitedByEmail: i.invited_by_email ?? '',
    status: STATUS_TO_PROTO[i.status],
    createdAt: timestampFromDate(i.created_at),
    expiresAt: timestampFromDate(i.expires_at),
  });

const limitsMessage = (l: Limits) => ({
  ...(l.emails !== undefined ? { emails: BigInt(l.emails) } : {}),
  ...(l.contacts !== undefined ? { contacts: BigInt(l.contacts) } : {}),
  ...(l.events !== undefined ? { events: BigInt(l.events) } : {}),
});

/** A present field sets the cap, a clear_* flag makes it unlimited, anything else keeps it. */
function limitsPatch(l: BillingLimits | undefined, clear: Record<'emails' | 'contacts' | 'events', boolean>) {
  const out: Partial<Record<'emails' | 'contacts' | 'events', number | null>> = {};
  for (const c of ['emails', 'contacts', 'events'] as const) {
    if (clear[c]) out[c] = null;
    else if (l?.[c] !== undefined) out[c] = Number(l[c]);
  }
  return out;
}

const wipe = (w: WipeView) =>
  create(ProjectWipeSchema, {
    id: w.id,
    projectId: w.project_id,
    kind: w.kind,
    status: w.status,
    steps: w.steps.map((s) => ({
      service: s.service,
      status: s.status,
      phase: s.phase,
      doneAt: s.done_at ? timestampFromDate(s.done_at) : undefined,
    })),
    createdAt: timestampFromDate(w.created_at),
    completedAt: w.completed_at ? timestampFromDate(w.completed_at) : undefined,
  });

const suspension = (s: SuspensionRow) =>
  create(SuspensionSchema, {
    id: s.id,
    projectId: s.project_id,
    metric: s.metric,
    rate: s.rate,
    threshold: s.threshold,
    sent: BigInt(s.sent),
    reason: s.reason,
    suspendedAt: timestampFromDate(s.suspended_at),
    liftedAt: s.lifted_at ? timestampFromDate(s.lifted_at) : undefined,
    liftedBy: s.lifted_by ?? '',
  });

export interface ProjectSafety {
  wipes: ProjectWipes;
  suspensions: Suspensions;
}

export function identityRoutes(
  identity: Identity,
  invitations: Invitations,
  lifecycle: AccountLifecycle,
  billing: Billing,
  safety: ProjectSafety,
  oauth: OAuth,
) {
  return (router: ConnectRouter) =>
    router.service(IdentityService, {
      async signUp(req) {
        const r = await identity.signUp(req);
        return { user: user(r.user), sessionToken: r.sessionToken };
      },
      async login(req) {
        const r = await identity.login(req);
        return { user: user(r.user), sessionToken: r.sessionToken };
      },
      async logout(req) {
        await identity.logout(req.sessionToken);
        return {};
      },
      async getSession(req) {
        return { user: user(await identity.session(req.sessionToken)) };
      },
      async getUser(req) {
        return { user: user(await identity.user(req.userId)) };
      },
      async listProjects(req) {
        return { projects: (await identity.listProjects(req.userId)).map(project) };
      },
      async createProject(req) {
        return { project: project(await identity.createProject(req.userId, req.name, req.sessionToken || undefined)) };
      },
      async getProject(req) {
        return { project: project(await identity.project(req.userId, req.projectId)) };
      },
      async updateProject(req) {
        return { project: project(await identity.updateProject(req.userId, req.projectId, { name: req.name })) };
      },
      async deleteProject(req) {
        return { wipe: wipe(await safety.wipes.delete(req.userId, req.projectId)) };
      },
      async resetProject(req) {
        return { wipe: wipe(await safety.wipes.reset(req.userId, req.projectId)) };
      },
      async getProjectWipe(req) {
        return { wipe: wipe(await safety.wipes.latest(req.userId, req.projectId)) };
      },
      async getProjectWipeStep(req) {
        return { pending: await safety.wipes.stepPending(req.wipeId, req.service) };
      },
      async completeProjectWipeStep(req) {
        await safety.wipes.completeStep(req.wipeId, req.service);
        return {};
      },
      async suspendProject(req) {
        const r = await safety.suspensions.suspend({ ...req, sent: Number(req.sent) });
        return { suspension: r.suspension ? suspension(r.suspension) : undefined, created: r.created };
      },
      async reinstateProject(req) {
        return { suspension: suspension(await safety.suspensions.reinstate(req.userId, req.projectId)) };
      },
      async getProjectSuspensions(req) {
        const state = await safety.suspensions.state(req.userId, req.projectId);
        return {
          active: state.active ? suspension(state.active) : undefined,
          history: state.history.map(suspension),
          projectDeleted: state.deleted,
        };
      },
      async regenerateKeys(req) {
        return { project: project(await identity.regenerateKeys(req.userId, req.projectId)) };
      },
      async verifyApiKey(req) {
        const r = await identity.verifyKey(req.key);
        return {
          projectId: r.projectId,
          keyType: r.kind === 'secret' ? KeyType.SECRET : KeyType.PUBLIC,
          projectDisabled: r.disabled,
        };
      },
      async listMembers(req) {
        return { members: (await identity.members(req.userId, req.projectId)).map(member) };
      },
      async inviteMember(req) {
        const role = roleFromProto(req.role);
        return { invitation: invitation(await invitations.invite(req.userId, req.projectId, req.email, role)) };
      },
      async updateMember(req) {
        return {
          member: member(
            await identity.updateMember(req.userId, req.projectId, req.memberUserId, roleFromProto(req.role)),
          ),
        };
      },
      async removeMember(req) {
        await identity.removeMember(req.userId, req.projectId, req.memberUserId);
        return {};
      },
      async listInvitations(req) {
        return { invitations: (await invitations.forProject(req.userId, req.projectId)).map(invitation) };
      },
      async revokeInvitation(req) {
        await invitations.revoke(req.userId, req.projectId, req.invitationId);
        return {};
      },
      async listMyInvitations(req) {
        return { invitations: (await invitations.mine(req.userId)).map(invitation) };
      },
      async acceptInvitation(req) {
        return { invitation: invitation(await invitations.accept(req.userId, req.invitationId)) };
      },
      async declineInvitation(req) {
        return { invitation: invitation(await invitations.decline(req.userId, req.invitationId)) };
      },
      async getOAuthConfig() {
        return { providers: oauth.list() };
      },
      async startOAuth(req) {
        return oauth.start(req.provider);
      },
      async completeOAuth(req) {
        const out = await oauth.complete(req.provider, req.code, req.codeVerifier);
        if (out.secured) lifecycle.noticeSecured(out.user, out.provider, out.secured);
        return { user: user(out.user), sessionToken: out.sessionToken, created: out.created };
      },
      async requestEmailVerification(req) {
        await lifecycle.requestVerification(req.userId);
        return {};
      },
      async verifyEmail(req) {
        return { user: user(await lifecycle.verifyEmail(req.token)) };
      },
      async requestPasswordReset(req) {
        await lifecycle.requestPasswordReset(req.email);
        return {};
      },
      async resetPassword(req) {
        await lifecycle.resetPassword(req.token, req.password);
        return {};
      },
      async getBillingLimits(req) {
        const v = await billing.view(req.userId, req.projectId);
        const account = v.row?.provider
          ? create(BillingAccountSchema, {
              provider: v.row.provider,
              customerId: v.row.customer_id,
              subscriptionId: v.row.subscription_id,
              status: v.row.subscription_status,
              updatedAt: timestampFromDate(v.row.updated_at),
            })
          : undefined;
        return { limits: limitsMessage(v.limits), account, canManage: v.canManage };
      },
      async setBillingLimits(req) {
        const clear = { emails: req.clearEmails, contacts: req.clearContacts, events: req.clearEvents };
        return {
          limits: limitsMessage(await billing.setLimits(req.userId, req.projectId, limitsPatch(req.limits, clear))),
        };
      },
      async getProjectBillingLimits(req) {
        return { limits: limitsMessage(await billing.limitsOfProject(req.projectId)) };
      },
      async recordBillingAccount(req) {
        const projectId = await billing.recordAccount(req.projectId, {
          provider: req.provider,
          customerId: req.customerId,
          subscriptionId: req.subscriptionId,
          status: req.status,
        });
        return { applied: projectId !== null, projectId: projectId ?? '' };
      },
    });
}
