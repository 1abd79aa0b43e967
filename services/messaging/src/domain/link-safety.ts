import { domainToASCII } from 'node:url';

// The platform's public host must not be an open redirector for phishing: a tracked link redirects only to a plain
// web address, of a project still in good standing, outside the domains the operator blocks (README "Links that do
// not redirect"). Anything else is answered with a warning page showing the destination as text.

export type LinkRefusal = 'project_suspended' | 'project_deleted' | 'blocked_domain' | 'unsafe_url';

/**
 * The URL when the platform may redirect to it: it parses, its scheme is http or https, and it carries no user name
 * or password (`https://bank.example@evil.example/` reads as the bank and opens evil.example).
 */
export function webDestination(url: string): URL | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
  if (u.username || u.password) return undefined;
  return u;
}

/** A domain as a URL's hostname spells it (lower case, IDN as punycode, no trailing dot); '' when it is none. */
export function normalDomain(domain: string): string {
  const d = domain
    .trim()
    .replace(/^\*?\./, '')
    .replace(/\.$/, '');
  return d && !/[\s/:@]/.test(d) ? domainToASCII(d) : '';
}

/** Destinations the operator refuses platform-wide (TRACKING_BLOCKED_DOMAINS): each domain and its subdomains. */
export class BlockedDomains {
  private readonly domains: Set<string>;

  /** `domains` as normalDomain() spells them. */
  constructor(domains: readonly string[]) {
    this.domains = new Set(domains);
  }

  blocks(hostname: string): boolean {
    if (!this.domains.size) return false;
    let h = hostname.toLowerCase().replace(/\.$/, '');
    for (;;) {
      if (this.domains.has(h)) return true;
      const dot = h.indexOf('.');
      if (dot < 0) return false;
      h = h.slice(dot + 1);
    }
  }
}
