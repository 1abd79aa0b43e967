import { generateKeyPair, randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { conflict, notFound, unverifiedDomain, validationError } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import type { DomainRow, DomainsStore } from '../store/domains-store.js';
import { domainOf } from './address.js';
import type { DnsResolver } from './dns-resolver.js';
import {
  isSandboxAddress,
  SANDBOX_DOMAIN,
  SANDBOX_SENDER,
  type SandboxSender,
  sandboxUnavailable,
} from './sandbox-sender.js';

const generateRsa = promisify(generateKeyPair);

export interface DnsRecordView {
  type: 'TXT';
  name: string;
  value: string;
  purpose: 'verification' | 'dkim' | 'spf';
  verified: boolean;
}

const HOSTNAME = /^(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;
export const VERIFICATION_PREFIX = '_svc-verification';

export function normalizeDomain(input: unknown): string {
  const domain = typeof input === 'string' ? input.trim().toLowerCase().replace(/\.$/, '') : '';
  if (!HOSTNAME.test(domain)) {
    throw validationError([
      {
        field: 'domain',
        message: 'Expected a domain name such as example.com',
        code: 'invalid_string',
        received: input,
      },
    ]);
  }
  return domain;
}

/** DKIM TXT value: the public key as base64 SubjectPublicKeyInfo (RFC 6376 3.6.1). */
const dkimValue = (publicKeyDer: string) => `v=DKIM1; k=rsa; p=${publicKeyDer}`;

/** The records to publish, with whether the last check found them. SPF is guidance, not checked. */
export function dnsRecords(d: DomainRow, spfInclude: string): DnsRecordView[] {
  const found = d.record_status ?? {};
  return [
    {
      type: 'TXT',
      name: `${VERIFICATION_PREFIX}.${d.domain}`,
      value: `svc-verification=${d.verification_token}`,
      purpose: 'verification',
      verified: !!found.verification,
    },
    {
      type: 'TXT',
      name: `${d.dkim_selector}._domainkey.${d.domain}`,
      value: dkimValue(d.dkim_public_key),
      purpose: 'dkim',
      verified: !!found.dkim,
    },
    { type: 'TXT', name: d.domain, value: `v=spf1 include:${spfInclude} ~all`, purpose: 'spf', verified: !!found.spf },
  ];
}

/** Whether the TXT answers carry our records; whitespace inside a DKIM record is insignificant. */
export function evaluateRecords(
  d: DomainRow,
  answers: { verification: string[]; dkim: string[]; spf: string[] },
  spfInclude: string,
) {
  const squash = (s: string) => s.replace(/\s+/g, '');
  const verification = answers.verification.some((v) => v.trim() === `svc-verification=${d.verification_token}`);
  const dkim = answers.dkim.some(
    // The p= tag must be the key itself: a key with characters after it (a stray quote) verifies nothing anywhere.
    (v) => squash(v).split(';').includes(`p=${d.dkim_public_key}`) && /(^|;)\s*v=DKIM1/i.test(v.trim() + ';'),
  );
  const spf = answers.spf.some((v) => /^v=spf1\b/i.test(v.trim()) && v.includes(`include:${spfInclude}`));
  return { verification, dkim, spf, verified: verification && dkim };
}

export interface SenderDomainsOptions {
  spfInclude: string;
  logger: Logger;
  /** Embedded mode with the local SMTP sink only: the pre-verified sandbox sender. */
  sandbox?: SandboxSender;
}

/**
 * How long a verified sender stays verified for sends without asking the database again (every send asks).
 * This replica's own changes (create, delete, a check) forget it at once; another replica's, and a project
 * wipe, are seen within this time.
 */
const VERIFIED_SENDER_CACHE_MS = 5_000;
const VERIFIED_SENDER_CACHE_MAX = 10_000;

/** Sender domains: DKIM keys, the records to publish, and their verification through DNS. */
export class SenderDomains {
  private readonly verifiedSenders = new Map<string, { row: DomainRow; at: number }>();
  /** Lookups in flight, by `project:domain`: the sends that miss the cache together share one query. */
  private readonly senderLookups = new Map<string, Promise<DomainRow | null>>();

  constructor(
    private readonly store: DomainsStore,
    private readonly dns: DnsResolver,
    private readonly opts: SenderDomainsOptions,
  ) {}

  records(d: DomainRow): DnsRecordView[] {
    return dnsRecords(d, this.opts.spfInclude);
  }

  async create(projectId: string, input: unknown): Promise<DomainRow> {
    const domain = normalizeDomain(input);
    if (domain === SANDBOX_DOMAIN || domain.endsWith(`.${SANDBOX_DOMAIN}`)) {
      throw validationError([
        { field: 'domain', code: 'reserved', message: `${domain} is reserved for the sandbox sender`, received: input },
      ]);
    }
    const { privateKey, publicKey } = await generateRsa('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'der' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const row = await this.store.insert({
      id: randomUUID(),
      project_id: projectId,
      domain,
      verification_token: randomBytes(18).toString('base64url'),
      // A fresh selector per domain record lets a re-added domain rotate its key.
      dkim_selector: `svc${randomBytes(4).toString('hex')}`,
      dkim_private_key: privateKey,
      dkim_public_key: publicKey.toString('base64'),
    });
    if (!row) throw conflict(`The domain ${domain} is already added to this project`, { domain });
    this.forget(projectId);
    return row;
  }

  list(projectId: string): Promise<DomainRow[]> {
    return this.store.list(projectId);
  }

  async get(projectId: string, id: string): Promise<DomainRow> {
    const row = isUuid(id) ? await this.store.get(projectId, id) : null;
    if (!row) throw notFound('Domain', id);
    return row;
  }

  async delete(projectId: string, id: string): Promise<void> {
    if (!isUuid(id) || !(await this.store.delete(projectId, id))) throw notFound('Domain', id);
    this.forget(projectId);
  }

  async verifyNow(projectId: string, id: string): Promise<DomainRow> {
    return this.check(await this.get(projectId, id));
  }

  /**
   * Looks the records up now. A DNS failure (timeout, SERVFAIL) keeps the current status:
   * only a definite "record absent" answer takes a verified domain back to pending.
   */
  async check(d: DomainRow): Promise<DomainRow> {
    const lookup = (name: string) => this.dns.resolveTxt(name);
    let answers: { verification: string[]; dkim: string[]; spf: string[] };
    try {
      const [verification, dkim, spf] = await Promise.all([
        lookup(`${VERIFICATION_PREFIX}.${d.domain}`),
        lookup(`${d.dkim_selector}._domainkey.${d.domain}`),
        lookup(d.domain),
      ]);
      answers = { verification, dkim, spf };
    } catch (err) {
      this.opts.logger.warn({ err, domain: d.domain }, 'domain check could not reach DNS; status kept');
      return (await this.store.saveCheck(d.id, d.status, d.record_status)) ?? d;
    }
    const result = evaluateRecords(d, answers, this.opts.spfInclude);
    const status = result.verified ? 'verified' : 'pending';
    const saved = await this.store.saveCheck(d.id, status, {
      verification: result.verification,
      dkim: result.dkim,
      spf: result.spf,
    });
    this.forget(d.project_id);
    if (saved && saved.status !== d.status)
      this.opts.logger.info({ domain: d.domain, projectId: d.project_id, status }, 'domain status changed');
    return saved ?? d;
  }

  /** The background check (DESIGN.md: every 5 minutes): checks the domains that are due. */
  /** Domains whose periodic re-check is due, stamped as checked now (see the domain checker). */
  claimDue(intervalSeconds: number, limit: number): Promise<DomainRow[]> {
    return this.store.claimDue(intervalSeconds, limit);
  }

  async checkClaimed(due: DomainRow[]): Promise<void> {
    for (const d of due) {
      await this.check(d).catch((err) => this.opts.logger.warn({ err, domain: d.domain }, 'domain check failed'));
    }
  }

  /** The verified domain that covers this sender address (the domain itself or a parent), or 403. */
  async requireVerifiedSender(projectId: string, email: string): Promise<DomainRow> {
    if (isSandboxAddress(email)) return this.sandboxRow(projectId);
    const domain = domainOf(email);
    const key = `${projectId}:${domain}`;
    const hit = this.verifiedSenders.get(key);
    if (hit && Date.now() - hit.at < VERIFIED_SENDER_CACHE_MS) return hit.row;
    let lookup = this.senderLookups.get(key);
    if (!lookup) {
      lookup = this.store.verifiedCovering(projectId, domain).finally(() => {
        if (this.senderLookups.get(key) === lookup) this.senderLookups.delete(key);
      });
      this.senderLookups.set(key, lookup);
    }
    const row = await lookup;
    if (!row)
      throw unverifiedDomain(
        domain,
        this.opts.sandbox
          ? ` Or try it first from ${SANDBOX_SENDER}: delivered to the local sink, see GET /dev/mail.`
          : '',
      );
    if (this.verifiedSenders.size >= VERIFIED_SENDER_CACHE_MAX) this.verifiedSenders.clear();
    this.verifiedSenders.set(key, { row, at: Date.now() });
    return row;
  }

  /** Drops the project's cached verified senders (its domains changed here). */
  private forget(projectId: string): void {
    for (const key of this.verifiedSenders.keys())
      if (key.startsWith(`${projectId}:`)) this.verifiedSenders.delete(key);
    // A lookup that started before the change answers its own callers only.
    for (const key of this.senderLookups.keys()) if (key.startsWith(`${projectId}:`)) this.senderLookups.delete(key);
  }

  /** The sandbox sender as a verified domain of every project, or 403 where there is no sandbox. */
  private sandboxRow(projectId: string): DomainRow {
    const s = this.opts.sandbox;
    if (!s) throw sandboxUnavailable();
    return {
      id: '00000000-0000-0000-0000-000000000000',
      project_id: projectId,
      domain: s.domain,
      status: 'verified',
      verification_token: '',
      dkim_selector: s.selector,
      dkim_private_key: s.privateKey,
      dkim_public_key: s.publicKey,
      record_status: { verification: true, dkim: true },
      created_at: new Date(0),
      verified_at: new Date(0),
      last_checked_at: null,
    };
  }
}
