import type { Pool, Queryable } from '@svc/lib/db';

export type TokenPurpose = 'verify_email' | 'reset_password';

export interface AccountTokenRow {
  token_hash: string;
  user_id: string;
  purpose: TokenPurpose;
  expires_at: Date;
  used_at: Date | null;
  expired: boolean;
}

/** Mailed single-use tokens, stored by hash. */
export class AccountTokensStore {
  constructor(readonly pool: Pool) {}

  async insert(tokenHash: string, userId: string, purpose: TokenPurpose, ttlSeconds: number): Promise<void> {
    await this.pool.query(
      `INSERT INTO account_tokens (token_hash, user_id, purpose, expires_at)
       VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
      [tokenHash, userId, purpose, ttlSeconds],
    );
  }

  /** Tokens of this purpose issued to the user within the window: the send throttle's count. */
  async issuedSince(userId: string, purpose: TokenPurpose, windowSeconds: number): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM account_tokens
       WHERE user_id = $1 AND purpose = $2 AND created_at > now() - make_interval(secs => $3)`,
      [userId, purpose, windowSeconds],
    );
    return rows[0].n;
  }

  /** Locks the row: two concurrent uses of one token serialize, and only the first finds it unused. */
  async byHashForUpdate(db: Queryable, tokenHash: string, purpose: TokenPurpose): Promise<AccountTokenRow | null> {
    const { rows } = await db.query<AccountTokenRow>(
      `SELECT token_hash, user_id, purpose, expires_at, used_at, expires_at <= now() AS expired
       FROM account_tokens WHERE token_hash = $1 AND purpose = $2 FOR UPDATE`,
      [tokenHash, purpose],
    );
    return rows[0] ?? null;
  }

  /** Marks this token used; a reset also spends the user's other open reset tokens. */
  async markUsed(db: Queryable, tokenHash: string): Promise<void> {
    await db.query('UPDATE account_tokens SET used_at = now() WHERE token_hash = $1', [tokenHash]);
  }

  async spendOpen(db: Queryable, userId: string, purpose: TokenPurpose): Promise<void> {
    await db.query(
      'UPDATE account_tokens SET used_at = now() WHERE user_id = $1 AND purpose = $2 AND used_at IS NULL',
      [userId, purpose],
    );
  }

  async markVerified(db: Queryable, userId: string): Promise<void> {
    await db.query('UPDATE users SET email_verified = true WHERE id = $1', [userId]);
  }

  async setPassword(db: Queryable, userId: string, passwordHash: string): Promise<void> {
    await db.query('UPDATE users SET password_hash = $2 WHERE id = $1', [userId, passwordHash]);
  }

  async endSessions(db: Queryable, userId: string): Promise<void> {
    await db.query('DELETE FROM sessions WHERE user_id = $1', [userId]);
  }
}
