import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import {
  InvitationStatus,
  Role,
  type Invitation,
  type Member,
  type Project,
  type ProjectWipe,
  type Suspension,
  type User,
} from '@svc/proto/svc/identity/v1/identity_pb';

export const iso = (t?: Timestamp) => (t ? timestampDate(t).toISOString() : null);

const ROLE_NAMES: Record<number, string> = { [Role.OWNER]: 'owner', [Role.ADMIN]: 'admin', [Role.MEMBER]: 'member' };

export const roleName = (r: Role) => ROLE_NAMES[r] ?? null;

export function roleValue(name: unknown): Role {
  const entry = Object.entries(ROLE_NAMES).find(([, n]) => n === name);
  return entry ? (Number(entry[0]) as Role) : Role.UNSPECIFIED;
}

export const userJson = (u: User) => ({
  id: u.id,
  email: u.email,
  emailVerified: u.emailVerified,
  createdAt: iso(u.createdAt),
});

/** Full keys appear only when just issued (creation, rotation); otherwise their display prefixes. */
export const projectJson = (p: Project) => ({
  id: p.id,
  name: p.name,
  ...(p.publicKey ? { publicKey: p.publicKey } : {}),
  ...(p.secretKey ? { secretKey: p.secretKey } : {}),
  publicKeyPrefix: p.publicKeyPrefix,
  secretKeyPrefix: p.secretKeyPrefix,
  disabled: p.disabled,
  role: roleName(p.role),
  createdAt: iso(p.createdAt),
  updatedAt: iso(p.updatedAt),
});

export const memberJson = (m: Member) => ({
  userId: m.userId,
  email: m.email,
  role: roleName(m.role),
  createdAt: iso(m.createdAt),
});

const STATUS_NAMES: Record<number, string> = {
  [InvitationStatus.PENDING]: 'pending',
  [InvitationStatus.ACCEPTED]: 'accepted',
  [InvitationStatus.DECLINED]: 'declined',
  [InvitationStatus.REVOKED]: 'revoked',
  [InvitationStatus.EXPIRED]: 'expired',
};

/** `invitedBy` is null once the inviting account is deleted. */
export const invitationJson = (i: Invitation) => ({
  id: i.id,
  projectId: i.projectId,
  projectName: i.projectName,
  email: i.email,
  role: roleName(i.role),
  invitedBy: i.invitedByUserId ? { userId: i.invitedByUserId, email: i.invitedByEmail } : null,
  status: STATUS_NAMES[i.status] ?? null,
  createdAt: iso(i.createdAt),
  expiresAt: iso(i.expiresAt),
});

/** A project reset or deletion and each service's step (waiting, running, done). */
export const wipeJson = (w: ProjectWipe) => ({
  id: w.id,
  projectId: w.projectId,
  kind: w.kind,
  status: w.status,
  steps: w.steps.map((s) => ({ service: s.service, phase: s.phase, status: s.status, doneAt: iso(s.doneAt) })),
  createdAt: iso(w.createdAt),
  completedAt: iso(w.completedAt),
});

export const suspensionJson = (s: Suspension) => ({
  id: s.id,
  metric: s.metric,
  rate: s.rate,
  threshold: s.threshold,
  sent: Number(s.sent),
  reason: s.reason,
  suspendedAt: iso(s.suspendedAt),
  liftedAt: iso(s.liftedAt),
  liftedBy: s.liftedBy || null,
});
