import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { accountEmailKey } from '@svc/lib/account-email';
import { withTransaction, type PoolClient } from '@svc/lib/db';
import { AppError, conflict, forbidden, notFound } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { parseOrThrow } from '@svc/lib/zod-errors';
import type { IdentityStore } from '../store/identity-store.js';
import type { InvitationRow, InvitationsStore } from '../store/invitations-store.js';
import { accountEmailSchema, type Identity } from './identity.js';
import { canChangeMember, canManageProject, type Role } from './roles.js';

const INVITATION_TTL_SECONDS = 7 * 24 * 3600;

const invitationNotFound = (id: string) => notFound('Invitation', id);
const denied = (message: string) => forbidden(message, 'PROJECT_ACCESS_DENIED');

/** 410: the invitation exists but can no longer be answered or revoked. */
const gone = (inv: InvitationRow) =>
  new AppError({
    code: 'INVITATION_GONE',
    status: 410,
    message: inv.status === 'expired' ? 'This invitation has expired' : `This invitation was already ${inv.status}`,
    details: { invitationId: inv.id, status: inv.status },
  });

/**
 * Nobody joins a project without consent: owners and admins invite an existing account, and the
 * invited user accepts (becoming a member with the invited role) or declines within 7 days.
 * Invitations go to existing accounts only, and only an account whose address is verified accepts:
 * anyone can sign up with an address they do not hold, and would otherwise join whatever its owner
 * is invited to.
 */
export class Invitations {
  constructor(
    private readonly identity: Identity,
    private readonly users: IdentityStore,
    private readonly store: InvitationsStore,
  ) {}

  async invite(userId: string, projectId: string, email: string, role: Exclude<Role, 'owner'>): Promise<InvitationRow> {
    const project = await this.identity.project(userId, projectId);
    const address = parseOrThrow(z.object({ email: accountEmailSchema }), { email }).email;
    if (!canChangeMember(project.role!, 'member', role)) {
      throw denied('Only the owner can invite admins; owners and admins invite members');
    }
    const invitee = await this.users.userByEmail(accountEmailKey(address));
    if (!invitee) throw notFound('User', address, 'USER_NOT_FOUND');
    if (await this.users.member(projectId, invitee.id)) throw conflict('This user is already a member of the project');
    const id = randomUUID();
    const row = { id, projectId, userId: invitee.id, role, invitedBy: userId, ttlSeconds: INVITATION_TTL_SECONDS };
    const inserted = await withTransaction(this.store.pool, (tx) => this.store.insert(tx, row));
    if (!inserted) throw conflict('This user already has a pending invitation to the project');
    return (await this.store.byId(this.store.pool, id))!;
  }

  /** Open invitations of a project: for the owner and admins, who can revoke them. */
  async forProject(userId: string, projectId: string): Promise<InvitationRow[]> {
    const project = await this.identity.project(userId, projectId);
    if (!canManageProject(project.role!)) throw denied('Only owners and admins see invitations');
    return this.store.openForProject(projectId);
  }

  async revoke(userId: string, projectId: string, invitationId: string): Promise<void> {
    const project = await this.identity.project(userId, projectId);
    const inv = isUuid(invitationId) ? await this.store.byId(this.store.pool, invitationId) : null;
    if (!inv || inv.project_id !== project.id) throw invitationNotFound(invitationId);
    if (!canChangeMember(project.role!, inv.role)) throw denied('Not allowed to revoke this invitation');
    if (inv.status !== 'pending') throw gone(inv);
    if (await this.store.close(this.store.pool, inv.id, 'revoked')) return;
    // Answered or lapsed between the read and the update.
    const now = await this.store.byId(this.store.pool, inv.id);
    throw now ? gone(now) : invitationNotFound(invitationId);
  }

  /** The signed-in user's open invitations. */
  mine(userId: string): Promise<InvitationRow[]> {
    return this.store.openForUser(userId);
  }

  /** Joins the project with the invited role; the row lock orders it against a concurrent revoke. */
  accept(userId: string, invitationId: string): Promise<InvitationRow> {
    return withTransaction(this.store.pool, async (tx) => {
      const inv = await this.openInvitationOf(userId, invitationId, tx);
      if (!(await this.users.userById(userId))?.email_verified) {
        throw forbidden(
          'Verify your email address before accepting an invitation: POST /auth/request-verification mails the link',
          'EMAIL_NOT_VERIFIED',
        );
      }
      if (!(await this.users.insertMember(tx, inv.project_id, userId, inv.role))) {
        throw conflict('You are already a member of this project');
      }
      await this.store.close(tx, inv.id, 'accepted');
      return { ...inv, status: 'accepted' };
    });
  }

  decline(userId: string, invitationId: string): Promise<InvitationRow> {
    return withTransaction(this.store.pool, async (tx) => {
      const inv = await this.openInvitationOf(userId, invitationId, tx);
      await this.store.close(tx, inv.id, 'declined');
      return { ...inv, status: 'declined' };
    });
  }

  /** The caller's invitation, locked and still open: another user's is a 404, a closed one a 410. */
  private async openInvitationOf(userId: string, invitationId: string, tx: PoolClient) {
    const inv = isUuid(invitationId) ? await this.store.byId(tx, invitationId, true) : null;
    if (!inv || inv.user_id !== userId) throw invitationNotFound(invitationId);
    if (inv.status !== 'pending') throw gone(inv);
    return inv;
  }
}
