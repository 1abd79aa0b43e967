import type { Logger } from './logger.js';

// Which failures mean "a dependency is down or too slow" (retry later) rather than "this request is wrong".

/** Socket-level failures: the peer is gone, refused us, or cannot be found right now. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs of a lost, refused or overloaded server: admin/crash shutdown and "cannot
 * connect now" (57P01-57P03), statement timeout (57014), idle-in-transaction timeout (25P03),
 * too many connections (53300); class 08 is every connection exception.
 */
const PG_UNAVAILABLE = new Set(['57P01', '57P02', '57P03', '57014', '25P03', '53300']);

/** node-postgres reports these without a code. */
const PG_MESSAGES = [
  /^Connection terminated/,
  /^Query read timeout$/,
  /^timeout exceeded when trying to connect$/,
  /is not queryable$/,
];

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  errors?: unknown;
  cause?: unknown;
}

/**
 * `err` (or an error it wraps) says PostgreSQL or the network is unavailable, not that the
 * request is wrong. Duck-typed: errors from another realm (a test VM) are not `instanceof Error`.
 */
export function isDependencyUnavailable(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 4) return false;
  const { code, message, errors, cause } = err as ErrorLike;
  if (
    typeof code === 'string' &&
    (NETWORK_CODES.has(code) || PG_UNAVAILABLE.has(code) || /^08[0-9A-Z]{3}$/.test(code))
  ) {
    return true;
  }
  if (typeof message === 'string' && PG_MESSAGES.some((re) => re.test(message))) return true;
  if (Array.isArray(errors) && errors.some((e) => isDependencyUnavailable(e, depth + 1))) return true; // AggregateError
  return isDependencyUnavailable(cause, depth + 1);
}

/**
 * For background loops (relay, workers, job runners) that retry on their own: a failed pass
 * caused by an outage is logged at debug only, since the outage itself is logged once per
 * change (DbHealth); any other failure at `level`.
 */
export function logPassFailure(
  logger: Logger,
  err: unknown,
  fields: Record<string, unknown>,
  msg: string,
  level: 'warn' | 'error' = 'warn',
): void {
  logger[isDependencyUnavailable(err) ? 'debug' : level]({ err, ...fields }, msg);
}
