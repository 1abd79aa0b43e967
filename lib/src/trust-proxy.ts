import { isIP } from 'node:net';

// Names Express (proxy-addr) understands for whole address ranges.
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** A hop count, or the addresses, CIDRs and range names whose forwarding headers are believed. */
export type TrustProxy = number | string[];

function isAddressOrCidr(entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * Parses TRUST_PROXY: `2` trusts two hops, `loopback, 10.0.0.0/8` trusts those peers.
 * Answers null for anything else, so a typo stops the process instead of trusting the wrong peers.
 */
export function parseTrustProxy(value: string): TrustProxy | null {
  const trimmed = value.trim();
  if (/^\d{1,2}$/.test(trimmed)) return Number(trimmed);
  const entries = trimmed.split(',').map((e) => e.trim());
  const valid = entries.every((e) => RANGE_NAMES.has(e) || isAddressOrCidr(e));
  return valid ? entries : null;
}
