import type { Pool, Queryable } from '@svc/lib/db';
import type { Role } from '../domain/roles.js';

export type InvitationStatus = 'pending' | 'accepted' | 'declined' | 'revoked' | 'expired';

export interface InvitationRow {
  id: string;
  project_id: string;
  project_name: string;
  user_id: string;
  email: string;
  role: Exclude<Role, 'owner'>;
  invited_by: string | null;
  invited_by_email: string | null;
  /** A pending invitation past its expiry reads as 'expired'. */
  status: InvitationStatus;
  created_at: Date;
  expires_at: Date;
}

// An open invitation can still be accepted, declined or revoked.
const OPEN = `i.status = 'pending' AND i.expires_at > now()`;

const SELECT = `
  SELECT i.id, i.project_id, p.name AS project_name, i.user_id, u.email, i.role, i.invited_by,
         b.email AS invited_by_email, i.created_at, i.expires_at,
         CASE WHEN i.status = 'pending' AND i.expires_at <= now() THEN 'expired' ELSE i.status END AS status
  FROM invitations i
  JOIN projects p ON p.id = i.project_id
  JOIN users u ON u.id = i.user_id
  LEFT JOIN users b ON b.id = i.invited_by`;

export class InvitationsStore {
  constructor(readonly pool: Pool) {}

  /** Inserts a pending invitation; false when the user already holds an open one for the project. */
  async insert(
    db: Queryable,
    inv: { id: string; projectId: string; userId: string; role: Role; invitedBy: string; ttlSeconds: number },
  ): Promise<boolean> {
    // A lapsed invitation must not block a new one: close it first (the unique index covers 'pending').
    await db.query(
      `UPDATE invitations SET status = 'expired', closed_at = now()
       WHERE project_id = $1 AND user_id = $2 AND status = 'pending' AND expires_at <= now()`,
      [inv.projectId, inv.userId],
    );
    const { rowCount } = await db.query(
      `INSERT INTO invitations (id, project_id, user_id, role, invited_by, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6)) ON CONFLICT DO NOTHING`,
      [inv.id, inv.projectId, inv.userId, inv.role, inv.invitedBy, inv.ttlSeconds],
    );
    return rowCount === 1;
  }

  /** One invitation; `lock` holds its row until the transaction ends (accept against revoke). */
  async byId(db: Queryable, id: string, lock = false): Promise<InvitationRow | null> {
    const { rows } = await db.query<InvitationRow>(`${SELECT} WHERE i.id = $1${lock ? ' FOR UPDATE OF i' : ''}`, [id]);
    return rows[0] ?? null;
  }

  async openForProject(projectId: string): Promise<InvitationRow[]> {
    const { rows } = await this.pool.query<InvitationRow>(
      `${SELECT} WHERE i.project_id = $1 AND ${OPEN} ORDER BY i.created_at`,
      [projectId],
    );
    return rows;
  }

  async openForUser(userId: string): Promise<InvitationRow[]> {
    const { rows } = await this.pool.query<InvitationRow>(
      `${SELECT} WHERE i.user_id = $1 AND ${OPEN} ORDER BY i.created_at DESC`,
      [userId],
    );
    return rows;
  }

  /** Moves an open invitation to its final status; false when it was no longer open. */
  async close(db: Queryable, id: string, status: 'accepted' | 'declined' | 'revoked'): Promise<boolean> {
    const { rowCount } = await db.query(
      `UPDATE invitations i SET status = $2, closed_at = now() WHERE i.id = $1 AND ${OPEN}`,
      [id, status],
    );
    return rowCount === 1;
  }
}
