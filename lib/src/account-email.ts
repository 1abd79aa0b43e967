import { createHash } from 'node:crypto';

// Identity compares account emails this way, and the login throttle keys attempts the same way:
// any spelling that reaches the same account must count against the same budget.

/** The spelling stored for a new account: as given, minus surrounding whitespace. */
export const tidyAccountEmail = (email: string): string => email.trim();

/** The comparison key of an account email: surrounding whitespace ignored, case-insensitive. */
export const accountEmailKey = (email: string): string => tidyAccountEmail(email).toLowerCase();

/**
 * The login throttle's key for one client address and account email. The email is hashed: a sign-in attempt
 * carries any string up to the body limit, and the limiter keeps its keys in memory and in Redis.
 */
export const loginThrottleKey = (clientAddress: string, email: string): string =>
  `login:${clientAddress}:${createHash('sha256').update(accountEmailKey(email)).digest('base64url')}`;
