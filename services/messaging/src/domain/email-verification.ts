import { createRequire } from 'node:module';
import { z } from 'zod';
import { parseOrThrow } from '@svc/lib/zod-errors';
import { isValidEmail } from './address.js';

// SPEC.md: `email (string, email), required`: a string that is not an address is a 422, like a missing one.
const verifyRequest = z.object({
  email: z
    .string({ required_error: 'Required' })
    .trim()
    .refine(isValidEmail, { message: 'Invalid email', params: { code: 'invalid_string' } }),
});

/** The address of a POST /v1/verify request; throws 422 VALIDATION_ERROR when missing or malformed. */
export function parseVerifyRequest(input: { email?: string }): string {
  return parseOrThrow(verifyRequest, input).email;
}

/** SPEC.md "Email verification result", plus `suggestion` (the corrected address) when `isTypo`. */
export interface EmailVerification {
  email: string;
  valid: boolean;
  isDisposable: boolean;
  isAlias: boolean;
  isTypo: boolean;
  isPlusAddressed: boolean;
  isPersonalEmail: boolean;
  domainExists: boolean;
  hasWebsite: boolean;
  hasMxRecords: boolean;
  reasons: string[];
  suggestion?: string;
}

/**
 * The DNS answers verification needs: an absent name is an empty answer, a failed lookup
 * (timeout, SERVFAIL) throws.
 */
export interface DnsLookup {
  resolveMx(domain: string): Promise<string[]>;
  /** Whether the name has an A or AAAA record. */
  resolveAny(domain: string): Promise<boolean>;
  resolveNs?(domain: string): Promise<string[]>;
}

// Role accounts: mailboxes of a function rather than a person. Reported as `isAlias`
// (reason `role_account`); they do not make an address invalid.
const ROLE_ACCOUNTS = new Set([
  'abuse',
  'accounts',
  'admin',
  'administrator',
  'billing',
  'careers',
  'contact',
  'do-not-reply',
  'donotreply',
  'enquiries',
  'feedback',
  'hello',
  'help',
  'hostmaster',
  'info',
  'jobs',
  'legal',
  'marketing',
  'newsletter',
  'no-reply',
  'noc',
  'noreply',
  'office',
  'postmaster',
  'press',
  'privacy',
  'root',
  'sales',
  'security',
  'support',
  'team',
  'webmaster',
]);

// Free mailbox providers: the address belongs to a person, not to a company domain.
const PERSONAL_DOMAINS = new Set([
  '126.com',
  '163.com',
  'aol.com',
  'att.net',
  'comcast.net',
  'email.com',
  'fastmail.com',
  'gmail.com',
  'googlemail.com',
  'hey.com',
  'icloud.com',
  'libero.it',
  'mac.com',
  'mail.com',
  'mail.ru',
  'me.com',
  'msn.com',
  'naver.com',
  'orange.fr',
  'pm.me',
  'proton.me',
  'protonmail.com',
  'qq.com',
  'rocketmail.com',
  'seznam.cz',
  't-online.de',
  'tuta.io',
  'tutanota.com',
  'verizon.net',
  'web.de',
  'ya.ru',
  'ymail.com',
  'zoho.com',
]);
// Providers with one domain per country: yahoo.co.uk, hotmail.fr, gmx.de, yandex.ru, ...
const PERSONAL_FAMILIES = /^(yahoo|hotmail|outlook|live|gmx|yandex)\.(com?\.)?[a-z]{2,3}$/;

// Typo targets: the big providers people mistype. Short names only tolerate one edit, since
// two edits from `aol.com` already reach many real company domains.
const TYPO_TARGETS = [
  'gmail.com',
  'yahoo.com',
  'hotmail.com',
  'outlook.com',
  'icloud.com',
  'aol.com',
  'live.com',
  'googlemail.com',
  'protonmail.com',
  'ymail.com',
];

let disposable: { exact: Set<string>; wildcard: Set<string> } | undefined;

function disposableLists() {
  // Loaded once, lazily: 120k names; createRequire because JSON import attributes are not reliable under jest.
  if (!disposable) {
    const require = createRequire(import.meta.url);
    disposable = {
      exact: new Set<string>(require('disposable-email-domains')),
      wildcard: new Set<string>(require('disposable-email-domains/wildcard.json')),
    };
  }
  return disposable;
}

function isDisposableDomain(domain: string): boolean {
  const { exact, wildcard } = disposableLists();
  // The wildcard list names providers that hand out any subdomain as well.
  if (exact.has(domain)) return true;
  const labels = domain.split('.');
  return labels.some((_, i) => wildcard.has(labels.slice(i).join('.')));
}

function isPersonalDomain(domain: string): boolean {
  return PERSONAL_DOMAINS.has(domain) || PERSONAL_FAMILIES.test(domain);
}

/** Optimal string alignment distance: a swapped pair of letters (gmial) counts as one edit. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

function typoTarget(domain: string): string | undefined {
  if (isPersonalDomain(domain)) return undefined; // a known good domain is never a typo
  let best: { target: string; distance: number } | undefined;
  for (const target of TYPO_TARGETS) {
    const distance = editDistance(domain, target);
    const allowed = target.length >= 9 ? 2 : 1;
    if (distance <= allowed && (!best || distance < best.distance)) best = { target, distance };
  }
  return best?.target;
}

/**
 * Verifies one address. `valid` = syntax ok && not disposable && domain exists && has MX
 * && not a likely typo. Role accounts, plus-addressing, personal providers and a missing
 * website are reported but do not make an address invalid.
 */
export async function verifyEmail(input: string, dns: DnsLookup): Promise<EmailVerification> {
  const email = input.trim();
  const result: EmailVerification = {
    email,
    valid: false,
    isDisposable: false,
    isAlias: false,
    isTypo: false,
    isPlusAddressed: false,
    isPersonalEmail: false,
    domainExists: false,
    hasWebsite: false,
    hasMxRecords: false,
    reasons: [],
  };
  if (!isValidEmail(email)) return { ...result, reasons: ['invalid_syntax'] };

  const at = email.lastIndexOf('@');
  const local = email.slice(0, at);
  const domain = email.slice(at + 1).toLowerCase();
  // "No such domain" is an answer; a lookup that times out or fails is not, and makes the
  // result `dns_error` instead of `domain_not_found` (results are never cached, so asking again helps).
  let unreachable = false;
  const ask = <T>(lookup: (() => Promise<T>) | undefined, nothing: T, counts = true): Promise<T> =>
    lookup
      ? Promise.resolve()
          .then(lookup)
          .catch(() => {
            if (counts) unreachable = true;
            return nothing;
          })
      : Promise.resolve(nothing);
  const [mx, hasAddress, wwwHasAddress, ns] = await Promise.all([
    ask(() => dns.resolveMx(domain), []),
    ask(() => dns.resolveAny(domain), false),
    ask(() => dns.resolveAny(`www.${domain}`), false, false),
    ask(dns.resolveNs && (() => dns.resolveNs!(domain)), []),
  ]);
  // RFC 7505 null MX ("." or empty exchange) says the domain takes no mail, but it does exist.
  const mailHosts = mx.filter((host) => host !== '' && host !== '.');
  const typo = typoTarget(domain);

  result.isDisposable = isDisposableDomain(domain);
  result.isAlias = ROLE_ACCOUNTS.has(local.split('+')[0].toLowerCase());
  result.isPlusAddressed = /^[^+]+\+/.test(local);
  result.isPersonalEmail = isPersonalDomain(domain);
  result.isTypo = typo !== undefined;
  if (typo) result.suggestion = `${local}@${typo}`;
  result.domainExists = hasAddress || mx.length > 0 || ns.length > 0;
  result.hasMxRecords = mailHosts.length > 0;
  result.hasWebsite = hasAddress || wwwHasAddress;
  result.valid = !result.isDisposable && result.domainExists && result.hasMxRecords && !result.isTypo;

  const dnsError = unreachable && !result.hasMxRecords;
  const checks: [boolean, string][] = [
    [result.isDisposable, 'disposable_domain'],
    [result.isTypo, 'possible_typo'],
    [result.isAlias, 'role_account'],
    [dnsError, 'dns_error'],
    [!dnsError && !result.domainExists, 'domain_not_found'],
    [!dnsError && !result.hasMxRecords, 'no_mx_records'],
    [!result.hasWebsite, 'no_website'],
  ];
  result.reasons = checks.filter(([failed]) => failed).map(([, reason]) => reason);
  return result;
}
