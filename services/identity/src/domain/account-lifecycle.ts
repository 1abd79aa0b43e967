import { z } from 'zod';
import { accountEmailKey } from '@svc/lib/account-email';
import { withTransaction } from '@svc/lib/db';
import { AppError, serviceUnavailable } from '@svc/lib/errors';
import type { Logger } from '@svc/lib/logger';
import { parseOrThrow } from '@svc/lib/zod-errors';
import type { AccountTokensStore, TokenPurpose } from '../store/account-tokens-store.js';
import type { IdentityStore, UserRow } from '../store/identity-store.js';
import { generateSessionToken, hashKey } from './api-keys.js';
import { hashPassword } from './passwords.js';
import type { AccountSecured } from './identity.js';
import type { SystemMailer } from './system-mail.js';

const MAX_ACCOUNT_EMAIL = 254;

/** At most this many mails of one kind per account per window; beyond it nothing is sent. */
export const MAILS_PER_WINDOW = 3;
export const MAIL_WINDOW_SECONDS = 15 * 60;

const passwordSchema = z.object({
  password: z.string().min(8, 'Password must be at least 8 characters').max(200),
});

const invalidToken = () =>
  new AppError({ code: 'INVALID_TOKEN', status: 400, message: 'This link is invalid, expired or was already used' });

const duration = (s: number) =>
  s % 3600 === 0 ? `${s / 3600} hour${s === 3600 ? '' : 's'}` : `${Math.ceil(s / 60)} minutes`;

export interface AccountLifecycleOptions {
  publicUrl: string;
  verificationTtlSeconds: number;
  resetTtlSeconds: number;
  logger: Logger;
}

/** Email verification and password reset: random 32-byte tokens, stored hashed, single-use, expiring. */
export class AccountLifecycle {
  constructor(
    private readonly users: IdentityStore,
    private readonly tokens: AccountTokensStore,
    private readonly mailer: SystemMailer,
    private readonly opts: AccountLifecycleOptions,
  ) {}

  /** Mails the signed-in user a verification link; already verified or throttled: nothing is sent. */
  async requestVerification(userId: string): Promise<void> {
    const user = await this.users.userById(userId);
    if (!user || user.email_verified) return;
    const token = await this.issue(user, 'verify_email', this.opts.verificationTtlSeconds);
    if (!token) return;
    const link = this.link('verify', token);
    try {
      await this.mailer.send({
        to: user.email,
        subject: 'Verify your email address',
        text:
          `Open this link within ${duration(this.opts.verificationTtlSeconds)} to verify your email address:` +
          `\n\n${link}\n`,
      });
    } catch (err) {
      this.opts.logger.warn({ err, userId }, 'verification mail not sent');
      throw serviceUnavailable('The verification mail could not be sent; retry shortly');
    }
  }

  async verifyEmail(token: string): Promise<UserRow> {
    const userId = await withTransaction(this.tokens.pool, async (tx) => {
      const row = await this.openToken(tx, token, 'verify_email');
      await this.tokens.markUsed(tx, row.token_hash);
      await this.tokens.markVerified(tx, row.user_id);
      return row.user_id;
    });
    return (await this.users.userById(userId))!;
  }

  /**
   * Same answer for any address: unknown, throttled and mail failures are only logged. The mail goes out after
   * the answer: waiting for the SMTP relay would make a known address answer measurably later than an unknown one.
   */
  async requestPasswordReset(email: string): Promise<void> {
    // No account has a longer address (RFC 5321's limit, checked at sign-up): a megabyte of one is not looked up.
    const possible = typeof email === 'string' && email.length > 0 && email.trim().length <= MAX_ACCOUNT_EMAIL;
    const user = possible ? await this.users.userByEmail(accountEmailKey(email)) : null;
    if (!user) return;
    const token = await this.issue(user, 'reset_password', this.opts.resetTtlSeconds);
    if (!token) return;
    const link = this.link('reset', token);
    this.mailer
      .send({
        to: user.email,
        subject: 'Reset your password',
        text:
          `Open this link within ${duration(this.opts.resetTtlSeconds)} to choose a new password:\n\n${link}\n\n` +
          'If you did not ask for this, ignore this mail: your password stays as it is.\n',
      })
      .catch((err: unknown) => this.opts.logger.warn({ err, userId: user.id }, 'password reset mail not sent'));
  }

  /**
   * Sets the password, spends the user's open reset tokens and ends all their sessions. The mailed link proves
   * the mailbox, so the address counts as verified too.
   */
  async resetPassword(token: string, password: string): Promise<void> {
    const parsed = parseOrThrow(passwordSchema, { password }).password;
    const passwordHash = await hashPassword(parsed);
    await withTransaction(this.tokens.pool, async (tx) => {
      const row = await this.openToken(tx, token, 'reset_password');
      await this.tokens.spendOpen(tx, row.user_id, 'reset_password');
      await this.tokens.setPassword(tx, row.user_id, passwordHash);
      await this.tokens.markVerified(tx, row.user_id);
      await this.tokens.endSessions(tx, row.user_id);
    });
  }

  /**
   * Tells the address's owner, after an OAuth sign-in took over an account someone opened with the address
   * (Identity.signInVerifiedEmail), what ended: the sign-in never waits for it, a failure is only logged.
   */
  noticeSecured(user: UserRow, provider: string, secured: AccountSecured): void {
    const projects = secured.projects.map(
      (p) =>
        `- ${p.name} (${p.id})` +
        (p.otherMembers.length ? `; other members, invited before: ${p.otherMembers.join(', ')}` : ''),
    );
    const text =
      `You signed in with ${provider} to the account of ${user.email}, which was opened with this address ` +
      'before anyone proved they hold the mailbox. Whoever opened it may not be you, so:\n\n' +
      '- its password was cleared and every other session was signed out;\n' +
      (secured.invitations
        ? `- ${secured.invitations} pending invitation(s) it sent or into its projects were revoked;\n`
        : '') +
      (projects.length
        ? '- the API keys of its projects were replaced, and the old ones no longer work. Issue new keys in the ' +
          'console (Settings, Rotate keys) and update your integrations:\n' +
          `${projects.join('\n')}\n`
        : '') +
      '\nIf you opened the account yourself, nothing else is needed beyond new keys. If not, check the projects, ' +
      'their members and their data: they were made by someone else.\n';
    this.mailer
      .send({ to: user.email, subject: 'Your account was secured: sessions ended, API keys rotated', text })
      .catch((err: unknown) => this.opts.logger.warn({ err, userId: user.id }, 'account secured mail not sent'));
  }

  private async issue(user: UserRow, purpose: TokenPurpose, ttlSeconds: number): Promise<string | null> {
    const token = generateSessionToken();
    const limit = { max: MAILS_PER_WINDOW, windowSeconds: MAIL_WINDOW_SECONDS };
    if (!(await this.tokens.insertWithin({ hash: token.hash, userId: user.id, purpose, ttlSeconds }, limit))) {
      this.opts.logger.info({ userId: user.id, purpose }, 'account mail throttled');
      return null;
    }
    return token.key;
  }

  private async openToken(tx: Parameters<AccountTokensStore['markUsed']>[0], token: string, purpose: TokenPurpose) {
    if (typeof token !== 'string' || !token || token.length > 200) throw invalidToken();
    const row = await this.tokens.byHashForUpdate(tx, hashKey(token), purpose);
    if (!row || row.used_at || row.expired) throw invalidToken();
    return row;
  }

  /** The console's page for the token (`/app/verify`, `/app/reset`), which posts it to the API. */
  private link(page: 'verify' | 'reset', token: string): string {
    return `${this.opts.publicUrl.replace(/\/$/, '')}/app/${page}?token=${token}`;
  }
}
