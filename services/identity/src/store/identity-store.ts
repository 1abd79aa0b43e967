import type { Pool, Queryable } from '@svc/lib/db';
import type { Role } from '../domain/roles.js';

export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  email_verified: boolean;
  created_at: Date;
}

export interface ProjectRow {
  id: string;
  name: string;
  disabled: boolean;
  public_key_prefix: string;
  secret_key_prefix: string;
  created_at: Date;
  updated_at: Date;
  role?: Role;
}

export interface MemberRow {
  user_id: string;
  email: string;
  role: Role;
  created_at: Date;
}

export interface KeyHashes {
  publicHash: string;
  publicPrefix: string;
  secretHash: string;
  secretPrefix: string;
}

const PROJECT_COLUMNS =
  'p.id, p.name, p.disabled, p.public_key_prefix, p.secret_key_prefix, p.created_at, p.updated_at';

export class IdentityStore {
  constructor(readonly pool: Pool) {}

  async insertUser(
    db: Queryable,
    u: { id: string; email: string; passwordHash: string; emailVerified?: boolean },
  ): Promise<UserRow | null> {
    const { rows } = await db.query<UserRow>(
      `INSERT INTO users (id, email, password_hash, email_verified) VALUES ($1, $2, $3, $4)
       ON CONFLICT (lower(email)) DO NOTHING RETURNING *`,
      [u.id, u.email, u.passwordHash, u.emailVerified ?? false],
    );
    return rows[0] ?? null;
  }

  /**
   * The user of that address with the address marked verified (an OAuth provider vouched for it). An address
   * not verified until now loses its password: whoever chose it never proved they hold the mailbox.
   * `newlyVerified` says so (the caller ends that user's sessions).
   */
  async verifiedUserByEmail(db: Queryable, emailKey: string): Promise<(UserRow & { newly_verified: boolean }) | null> {
    const { rows } = await db.query<UserRow & { newly_verified: boolean }>(
      `WITH before AS (SELECT id, email_verified FROM users WHERE lower(email) = $1 FOR UPDATE)
       UPDATE users u SET email_verified = true,
         password_hash = CASE WHEN before.email_verified THEN u.password_hash ELSE '' END
       FROM before WHERE u.id = before.id
       RETURNING u.*, NOT before.email_verified AS newly_verified`,
      [emailKey],
    );
    return rows[0] ?? null;
  }

  /** `emailKey` is accountEmailKey(email): the lower-case form the unique index holds. */
  async userByEmail(emailKey: string): Promise<UserRow | null> {
    const { rows } = await this.pool.query<UserRow>('SELECT * FROM users WHERE lower(email) = $1', [emailKey]);
    return rows[0] ?? null;
  }

  async userById(id: string): Promise<UserRow | null> {
    const { rows } = await this.pool.query<UserRow>('SELECT * FROM users WHERE id = $1', [id]);
    return rows[0] ?? null;
  }

  async insertSession(db: Queryable, tokenHash: string, userId: string, ttlSeconds: number): Promise<void> {
    await db.query(
      `INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))`,
      [tokenHash, userId, ttlSeconds],
    );
  }

  async userBySession(tokenHash: string): Promise<UserRow | null> {
    const { rows } = await this.pool.query<UserRow>(
      `SELECT u.* FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > now()`,
      [tokenHash],
    );
    return rows[0] ?? null;
  }

  /**
   * Whether the session of `userId` is still open, holding the user's row (FOR KEY SHARE) until `db` ends: an OAuth
   * takeover (which locks it FOR UPDATE, then ends the sessions) under way is waited for and its end seen; one that
   * comes later waits for `db` and finds what it stored. The row first, then the session, as the takeover does.
   */
  async holdSession(db: Queryable, userId: string, tokenHash: string): Promise<boolean> {
    const { rowCount } = await db.query('SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE', [userId]);
    if (!rowCount) return false;
    const { rows } = await db.query(
      'SELECT 1 FROM sessions WHERE token_hash = $1 AND user_id = $2 AND expires_at > now()',
      [tokenHash, userId],
    );
    return rows.length > 0;
  }

  async deleteSession(tokenHash: string): Promise<void> {
    await this.pool.query('DELETE FROM sessions WHERE token_hash = $1', [tokenHash]);
  }

  async deleteSessionsOf(db: Queryable, userId: string): Promise<void> {
    await db.query('DELETE FROM sessions WHERE user_id = $1', [userId]);
  }

  /**
   * What an account opened by someone else with this address left behind, ended for the address's owner
   * (Identity.signInVerifiedEmail): the mailed links still open (verification, password reset) are spent, and
   * the pending invitations it sent or that invite into its projects are revoked. Answers its projects (it
   * created every one: an unverified address accepts no invitation), locked for the key rotation that follows.
   */
  async endUnverifiedTenure(db: Queryable, userId: string): Promise<{ projects: ProjectRow[]; invitations: number }> {
    await db.query('UPDATE account_tokens SET used_at = now() WHERE user_id = $1 AND used_at IS NULL', [userId]);
    const { rows: projects } = await db.query<ProjectRow>(
      `SELECT ${PROJECT_COLUMNS}, m.role FROM projects p JOIN members m ON m.project_id = p.id
       WHERE m.user_id = $1 ORDER BY p.created_at FOR UPDATE OF p`,
      [userId],
    );
    const { rowCount } = await db.query(
      `UPDATE invitations SET status = 'revoked', closed_at = now()
       WHERE status = 'pending' AND (invited_by = $1 OR project_id = ANY($2::uuid[]))`,
      [userId, projects.map((p) => p.id)],
    );
    return { projects, invitations: rowCount ?? 0 };
  }

  async insertProject(
    db: Queryable,
    p: { id: string; name: string; ownerId: string; keys: KeyHashes },
  ): Promise<ProjectRow> {
    const { rows } = await db.query<ProjectRow>(
      `INSERT INTO projects (id, name, public_key_hash, public_key_prefix, secret_key_hash, secret_key_prefix)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
      [p.id, p.name, p.keys.publicHash, p.keys.publicPrefix, p.keys.secretHash, p.keys.secretPrefix],
    );
    await db.query(`INSERT INTO members (project_id, user_id, role) VALUES ($1, $2, 'owner')`, [p.id, p.ownerId]);
    return { ...rows[0], role: 'owner' };
  }

  async projectsOfUser(userId: string): Promise<ProjectRow[]> {
    const { rows } = await this.pool.query<ProjectRow>(
      `SELECT ${PROJECT_COLUMNS}, m.role FROM projects p JOIN members m ON m.project_id = p.id
       WHERE m.user_id = $1 ORDER BY p.created_at DESC`,
      [userId],
    );
    return rows;
  }

  /** The project as seen by one user: null when it is absent or the user is not a member. */
  async projectForUser(projectId: string, userId: string): Promise<ProjectRow | null> {
    const { rows } = await this.pool.query<ProjectRow>(
      `SELECT ${PROJECT_COLUMNS}, m.role FROM projects p JOIN members m ON m.project_id = p.id
       WHERE p.id = $1 AND m.user_id = $2`,
      [projectId, userId],
    );
    return rows[0] ?? null;
  }

  async renameProject(projectId: string, name: string): Promise<void> {
    await this.pool.query('UPDATE projects SET name = $2, updated_at = now() WHERE id = $1', [projectId, name]);
  }

  async replaceKeys(db: Queryable, projectId: string, keys: KeyHashes): Promise<void> {
    await db.query(
      `UPDATE projects SET public_key_hash = $2, public_key_prefix = $3, secret_key_hash = $4,
         secret_key_prefix = $5, updated_at = now() WHERE id = $1`,
      [projectId, keys.publicHash, keys.publicPrefix, keys.secretHash, keys.secretPrefix],
    );
  }

  async deleteProject(db: Queryable, projectId: string): Promise<void> {
    await db.query('DELETE FROM projects WHERE id = $1', [projectId]);
  }

  async projectByKeyHash(hash: string): Promise<{ id: string; disabled: boolean; kind: 'secret' | 'public' } | null> {
    const { rows } = await this.pool.query<{ id: string; disabled: boolean; kind: 'secret' | 'public' }>(
      `SELECT id, disabled, CASE WHEN secret_key_hash = $1 THEN 'secret' ELSE 'public' END AS kind
       FROM projects WHERE secret_key_hash = $1 OR public_key_hash = $1`,
      [hash],
    );
    return rows[0] ?? null;
  }

  async members(projectId: string): Promise<MemberRow[]> {
    const { rows } = await this.pool.query<MemberRow>(
      `SELECT m.user_id, u.email, m.role, m.created_at FROM members m JOIN users u ON u.id = m.user_id
       WHERE m.project_id = $1 ORDER BY m.created_at`,
      [projectId],
    );
    return rows;
  }

  async member(projectId: string, userId: string): Promise<MemberRow | null> {
    const { rows } = await this.pool.query<MemberRow>(
      `SELECT m.user_id, u.email, m.role, m.created_at FROM members m JOIN users u ON u.id = m.user_id
       WHERE m.project_id = $1 AND m.user_id = $2`,
      [projectId, userId],
    );
    return rows[0] ?? null;
  }

  async insertMember(db: Queryable, projectId: string, userId: string, role: Role): Promise<boolean> {
    const { rowCount } = await db.query(
      `INSERT INTO members (project_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [projectId, userId, role],
    );
    return rowCount === 1;
  }

  async updateMemberRole(projectId: string, userId: string, role: Role): Promise<void> {
    await this.pool.query('UPDATE members SET role = $3 WHERE project_id = $1 AND user_id = $2', [
      projectId,
      userId,
      role,
    ]);
  }

  async deleteMember(projectId: string, userId: string): Promise<void> {
    await this.pool.query('DELETE FROM members WHERE project_id = $1 AND user_id = $2', [projectId, userId]);
  }
}
