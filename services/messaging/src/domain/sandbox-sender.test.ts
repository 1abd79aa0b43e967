import { generateKeyPairSync } from 'node:crypto';
import { AppError } from '@svc/lib/errors';
import type { Logger } from '@svc/lib/logger';
import type { DomainsStore } from '../store/domains-store.js';
import type { DnsResolver } from './dns-resolver.js';
import { isSandboxAddress, SANDBOX_DOMAIN, type SandboxSender } from './sandbox-sender.js';
import { SenderDomains } from './sender-domains.js';

const projectId = '0190f5a2-7c3b-7def-8a12-3456789abcde';
const store = { verifiedCovering: async () => null } as unknown as DomainsStore;
const dns = {} as DnsResolver;
const logger = {} as Logger;
const privateKey = generateKeyPairSync('rsa', { modulusLength: 1024 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const sandbox: SandboxSender = { domain: SANDBOX_DOMAIN, selector: 'sandbox', privateKey, publicKey: 'p' };

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('the sandbox sender', () => {
  test('only addresses at sandbox.localhost itself are sandbox addresses', () => {
    expect(isSandboxAddress('sandbox@sandbox.localhost')).toBe(true);
    expect(isSandboxAddress('News@Sandbox.Localhost')).toBe(true);
    expect(isSandboxAddress('a@mail.sandbox.localhost')).toBe(false);
    expect(isSandboxAddress('sandbox@example.com')).toBe(false);
  });

  test('with the local sink: verified for every project, signed with the sandbox key', async () => {
    const domains = new SenderDomains(store, dns, { spfInclude: '_spf.x', logger, sandbox });
    const row = await domains.requireVerifiedSender(projectId, 'sandbox@sandbox.localhost');
    expect(row).toMatchObject({
      project_id: projectId,
      domain: SANDBOX_DOMAIN,
      status: 'verified',
      dkim_selector: 'sandbox',
      dkim_private_key: privateKey,
    });
    // Another domain still needs verifying; the 403 points at the sandbox.
    const e = await refusal(domains.requireVerifiedSender(projectId, 'a@example.com'));
    expect(e.status).toBe(403);
    expect(e.suggestion).toContain('sandbox@sandbox.localhost');
  });

  test('without it (distributed mode, SMTP_URL): 403 sandbox_unavailable; no hint at the sandbox', async () => {
    const domains = new SenderDomains(store, dns, { spfInclude: '_spf.x', logger });
    const e = await refusal(domains.requireVerifiedSender(projectId, 'sandbox@sandbox.localhost'));
    expect(e).toMatchObject({ status: 403, details: { reason: 'sandbox_unavailable', domain: SANDBOX_DOMAIN } });
    const other = await refusal(domains.requireVerifiedSender(projectId, 'a@example.com'));
    expect(other.suggestion).not.toContain('sandbox');
  });

  test('sandbox.localhost and names below it cannot be added as a domain', async () => {
    const domains = new SenderDomains(store, dns, { spfInclude: '_spf.x', logger, sandbox });
    for (const d of ['sandbox.localhost', 'mail.sandbox.localhost']) {
      const e = await refusal(domains.create(projectId, d));
      expect(e.status).toBe(422);
    }
  });
});
