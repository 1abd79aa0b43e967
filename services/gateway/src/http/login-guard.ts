import { createHash } from 'node:crypto';
import { accountEmailKey, loginThrottleKey } from '@svc/lib/account-email';
import { AppError } from '@svc/lib/errors';
import type { RateLimiter } from '@svc/lib/rate-limit';
import type { BucketShape, TokenBuckets } from '@svc/lib/token-bucket';
import { clientNetwork } from './client-network.js';

export interface LoginLimits {
  /** Failed sign-ins per client across all accounts, per window. */
  failuresPerClient: number;
  /** Failed sign-ins per account across all clients, per window, before the account is slowed. */
  failuresPerAccount: number;
  windowMs: number;
}

/** Attempts per minute for one account from one client, failed or not. */
const ATTEMPTS_PER_MINUTE = 10;

const tooMany = (retryAfterMs: number) =>
  new AppError({
    code: 'RATE_LIMIT_EXCEEDED',
    status: 429,
    message: 'Too many login attempts; try again later',
    details: { retryAfter: Math.max(1, Math.ceil(retryAfterMs / 1000)) },
  });

/**
 * Password guessing and spraying (README "Login throttle"), per client (an IPv4 address or an IPv6 /64):
 * - attempts per client and account, failed or not (ATTEMPTS_PER_MINUTE);
 * - failures per client across all accounts: one client trying a common password against many addresses;
 * - failures per account across all clients: many clients against one address. A spent account budget slows the
 *   account, never locks it: a client with no failure against it in the window still gets its attempt (the owner
 *   signing in as usual), the others wait for the budget to refill. An attacker thus gets one guess per client
 *   and window, and cannot keep the owner out.
 * Only a refused password or unknown address (INVALID_CREDENTIALS) is a failure. The tokens are taken before
 * identity is asked, so concurrent guesses cannot overshoot a budget, and given back when the attempt did not fail.
 * A Redis fault counts in-process instead (FailOpenTokenBuckets), as every rate limit does.
 */
export class LoginGuard {
  private readonly client: BucketShape;
  private readonly account: BucketShape;
  /** One failure of a client against an account, remembered for a window. */
  private readonly pair: BucketShape;

  constructor(
    private readonly limiter: RateLimiter,
    private readonly buckets: TokenBuckets,
    limits: LoginLimits,
  ) {
    this.client = { capacity: limits.failuresPerClient, perMs: limits.failuresPerClient / limits.windowMs };
    this.account = { capacity: limits.failuresPerAccount, perMs: limits.failuresPerAccount / limits.windowMs };
    this.pair = { capacity: 1, perMs: 1 / limits.windowMs };
  }

  /** Runs `login` if every budget allows it; else throws 429 RATE_LIMIT_EXCEEDED with `details.retryAfter`. */
  async attempt<T>(clientAddress: string | undefined, email: string, login: () => Promise<T>): Promise<T> {
    const client = clientNetwork(clientAddress);
    const attempts = await this.limiter.hit(loginThrottleKey(client, email), ATTEMPTS_PER_MINUTE, 60_000);
    if (!attempts.allowed) throw tooMany(attempts.retryAfter * 1000);

    // Hashed as the throttle key is: an attempt carries any string up to the body limit.
    const account = createHash('sha256').update(accountEmailKey(email)).digest('base64url');
    const pair = { key: `pair:${client}:${account}`, shape: this.pair };
    const held: { key: string; shape: BucketShape }[] = [];
    const giveBack = () => Promise.all(held.map((h) => this.buckets.take(h.key, h.shape, -1)));

    const byClient = { key: `client:${client}`, shape: this.client };
    const c = await this.buckets.take(byClient.key, byClient.shape, 1);
    if (!c.granted) throw tooMany(c.waitMs);
    held.push(byClient);
    const byAccount = { key: `account:${account}`, shape: this.account };
    const a = await this.buckets.take(byAccount.key, byAccount.shape, 1);
    if (a.granted) held.push(byAccount);
    else {
      // Slowed: only a client that has not failed against this account in the window may try.
      const p = await this.buckets.take(pair.key, pair.shape, 1);
      if (!p.granted) {
        await giveBack();
        throw tooMany(Math.min(a.waitMs, p.waitMs));
      }
      held.push(pair);
    }

    let out: T;
    try {
      out = await login();
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'INVALID_CREDENTIALS') await giveBack();
      else if (a.granted) await this.buckets.take(pair.key, pair.shape, 1);
      throw err;
    }
    await giveBack();
    return out;
  }
}
