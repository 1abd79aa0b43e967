export type Role = 'owner' | 'admin' | 'member';

const RANK: Record<Role, number> = { owner: 3, admin: 2, member: 1 };

/** Settings and key rotation: owners and admins. */
export const canManageProject = (role: Role) => RANK[role] >= RANK.admin;

/** Deleting a project is irreversible: the owner only. */
export const canDeleteProject = (role: Role) => role === 'owner';

/**
 * Owners and admins manage members, but nobody hands out or takes away more than they
 * hold, and the owner is never demoted or removed (a project always has one).
 */
export function canChangeMember(actor: Role, target: Role, newRole?: Role): boolean {
  if (!canManageProject(actor) || target === 'owner' || newRole === 'owner') return false;
  if (actor === 'admin' && target === 'admin' && newRole !== undefined) return false;
  return newRole === undefined || RANK[newRole] <= RANK[actor];
}
