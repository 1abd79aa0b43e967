import { isIP } from 'node:net';

/**
 * The unit the per-client limits (login, sign-up) count: an IPv4 address, or an IPv6 address's /64. One
 * subscriber gets a whole /64, so counting single IPv6 addresses would give a client 2^64 fresh budgets.
 * `ip` is Express's `req.ip`: the peer, or X-Forwarded-For's client only from proxies TRUST_PROXY trusts.
 */
export function clientNetwork(ip: string | undefined): string {
  const address = (ip ?? '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1];
  if (isIP(address) !== 6) return address;
  const [head, tail] = address.split('::');
  const groups = head ? head.split(':') : [];
  if (tail !== undefined) {
    const rest = tail ? tail.split(':') : [];
    // An embedded IPv4 address (the last 32 bits) is two groups.
    const restGroups = rest.length + (rest.at(-1)?.includes('.') ? 1 : 0);
    groups.push(...Array<string>(8 - groups.length - restGroups).fill('0'), ...rest);
  }
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
