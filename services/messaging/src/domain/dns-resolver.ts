import { Resolver } from 'node:dns/promises';
import type { DnsLookup } from './email-verification.js';

export interface DnsResolverOptions {
  /** `host:port` resolvers, e.g. from DNS_SERVERS=127.0.0.1:5353 (DESIGN.md 7). Default: the system's. */
  servers?: string[];
  /** Bound on each lookup. Default 2000 ms. */
  timeoutMs?: number;
}

export interface DnsResolver extends DnsLookup {
  resolveNs(domain: string): Promise<string[]>;
  /**
   * TXT records with their chunks joined (SPF and DKIM keys span several 255-byte strings).
   * Unlike the other lookups it rejects on timeouts and server failures, so domain
   * verification can tell "record absent" from "could not ask" and keep a verified domain.
   */
  resolveTxt(name: string): Promise<string[]>;
}

// "This name or this type has no records": an answer, not a failure.
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND']);

export function createDnsResolver(options: DnsResolverOptions = {}): DnsResolver {
  const timeoutMs = options.timeoutMs ?? 2000;
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  if (options.servers?.length) resolver.setServers(options.servers);

  // c-ares' own timeout is per try and per server; the race bounds the whole lookup.
  const bounded = <T>(lookup: Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error('DNS lookup timed out'), { code: 'ETIMEOUT' })),
        timeoutMs,
      );
    });
    return Promise.race([lookup, timeout]).finally(() => clearTimeout(timer));
  };
  // No such name or record is an empty answer; a timeout or a failing server is thrown, so that
  // callers can tell "does not exist" from "could not ask".
  const orEmpty = async <T>(lookup: Promise<T[]>): Promise<T[]> => {
    try {
      return await bounded(lookup);
    } catch (err) {
      if (NO_RECORDS.has((err as NodeJS.ErrnoException).code ?? '')) return [];
      throw err;
    }
  };

  return {
    async resolveMx(domain) {
      const records = await orEmpty(resolver.resolveMx(domain));
      return records.sort((a, b) => a.priority - b.priority).map((r) => r.exchange);
    },
    async resolveAny(domain) {
      const [v4, v6] = await Promise.allSettled([
        orEmpty(resolver.resolve4(domain)),
        orEmpty(resolver.resolve6(domain)),
      ]);
      const found = [v4, v6].some((r) => r.status === 'fulfilled' && r.value.length > 0);
      const failed = [v4, v6].find((r) => r.status === 'rejected');
      if (!found && failed) throw failed.reason;
      return found;
    },
    async resolveNs(domain) {
      return orEmpty(resolver.resolveNs(domain));
    },
    async resolveTxt(name) {
      try {
        return (await bounded(resolver.resolveTxt(name))).map((chunks) => chunks.join(''));
      } catch (err) {
        if (NO_RECORDS.has((err as NodeJS.ErrnoException).code ?? '')) return [];
        throw err;
      }
    },
  };
}
