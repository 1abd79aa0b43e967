import { withTransaction, type Pool, type Queryable } from '@svc/lib/db';

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

  /**
   * Inserts the token unless `max` of this purpose were issued to the user within the window (the send
   * throttle); false when throttled. The user's row is locked first: requests that arrive together count
   * one after another, so no burst gets past the limit.
   */
  async insertWithin(
    token: { hash: string; userId: string; purpose: TokenPurpose; ttlSeconds: number },
    limit: { max: number; windowSeconds: number },
  ): Promise<boolean> {
    return withTransaction(this.pool, async (tx) => {
      await tx.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [token.userId]);
      const { rows } = await tx.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM account_tokens
         WHERE user_id = $1 AND purpose = $2 AND created_at > now() - make_interval(secs => $3)`,
        [token.userId, token.purpose, limit.windowSeconds],
      );
      if (rows[0].n >= limit.max) return false;
      await tx.query(
        `INSERT INTO account_tokens (token_hash, user_id, purpose, expires_at)
         VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
        [token.hash, token.userId, token.purpose, token.ttlSeconds],
      );
      return true;
    });
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
