export type Role = 'owner' | 'admin' | 'member';

const RANK: Record<Role, number> = { owner: 3, admin: 2, member: 1 };

/** Settings and key rotation: owners and admins. */
export const canManageProject = (role: Role) => RANK[role] >= RANK.admin;

/** Deleting a project is irreversible: the owner only. */
export const canDeleteProject = (role: Role) => role === 'owner';

/**
 * Who may invite, change or remove whom. The owner manages admins and members; admins manage
 * members only: they cannot invite or promote admins, nor change or remove another admin (removing
 * and re-inviting would otherwise demote one). The owner is never changed or removed, and nobody
 * becomes a second owner.
 */
export function canChangeMember(actor: Role, target: Role, newRole?: Role): boolean {
  if (!canManageProject(actor) || target === 'owner' || newRole === 'owner') return false;
  if (actor === 'owner') return true;
  return target === 'member' && (newRole === undefined || newRole === 'member');
}
