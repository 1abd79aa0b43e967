import { createDnsResolver, type DnsResolver } from './dns-resolver.js';
import { startTestDnsServer, type TestDnsServer } from '@svc/lib/test-dns-server';
import { verifyEmail, type DnsLookup } from './email-verification.js';

const mail = (host: string) => ({ A: ['192.0.2.1'], MX: [{ exchange: `mx.${host}`, priority: 10 }] });

let server: TestDnsServer;
let dns: DnsResolver;

beforeAll(async () => {
  server = await startTestDnsServer({
    'example.test': mail('example.test'),
    'www.example.test': { A: ['192.0.2.2'] },
    'webonly.test': { A: ['192.0.2.3'] },
    'mailonly.test': { MX: [{ exchange: 'mx.mailonly.test', priority: 10 }] },
    'delegated.test': { NS: ['ns1.other.test'] },
    'nullmx.test': { A: ['192.0.2.4'], MX: [{ exchange: '', priority: 0 }] },
    'slow.test': { silent: true },
    'www.slow.test': { silent: true },
    'broken.test': { servfail: true },
    'gmail.com': mail('gmail.com'),
    'yahoo.co.uk': mail('yahoo.co.uk'),
    'gmial.com': mail('gmial.com'),
    'mailinator.com': mail('mailinator.com'),
    'box.33mail.com': mail('box.33mail.com'),
  });
  dns = createDnsResolver({ servers: [server.address], timeoutMs: 300 });
});

afterAll(async () => {
  await server.close();
});

describe('email verification (/v1/verify) against a loopback DNS server', () => {
  test('a deliverable address is valid and carries every SPEC.md field', async () => {
    expect(await verifyEmail('ann@example.test', dns)).toEqual({
      email: 'ann@example.test',
      valid: true,
      isDisposable: false,
      isAlias: false,
      isTypo: false,
      isPlusAddressed: false,
      isPersonalEmail: false,
      domainExists: true,
      hasWebsite: true,
      hasMxRecords: true,
      reasons: [],
    });
  });

  test('bad syntax fails without any DNS lookup', async () => {
    const untouchable: DnsLookup = {
      resolveMx: () => {
        throw new Error('no lookups expected');
      },
      resolveAny: () => {
        throw new Error('no lookups expected');
      },
    };
    const result = await verifyEmail('not-an-email', untouchable);
    expect(result).toMatchObject({
      email: 'not-an-email',
      valid: false,
      domainExists: false,
      hasMxRecords: false,
      reasons: ['invalid_syntax'],
    });
  });

  test('disposable domains are invalid, including subdomains of wildcard providers', async () => {
    expect(await verifyEmail('x@mailinator.com', dns)).toMatchObject({
      isDisposable: true,
      valid: false,
      reasons: ['disposable_domain'],
    });
    expect(await verifyEmail('x@box.33mail.com', dns)).toMatchObject({ isDisposable: true, valid: false });
  });

  test('plus addressing is reported and does not invalidate', async () => {
    expect(await verifyEmail('ann+news@example.test', dns)).toMatchObject({
      isPlusAddressed: true,
      valid: true,
      reasons: [],
    });
    expect(await verifyEmail('ann@example.test', dns)).toMatchObject({ isPlusAddressed: false });
  });

  test('role accounts are aliases (reason role_account) and stay valid', async () => {
    for (const local of ['info', 'Admin', 'support+x', 'noreply', 'postmaster']) {
      expect(await verifyEmail(`${local}@example.test`, dns)).toMatchObject({
        isAlias: true,
        valid: true,
        reasons: ['role_account'],
      });
    }
  });

  test('free mailbox providers are personal email', async () => {
    expect(await verifyEmail('ann@gmail.com', dns)).toMatchObject({
      isPersonalEmail: true,
      isTypo: false,
      valid: true,
    });
    expect(await verifyEmail('ann@yahoo.co.uk', dns)).toMatchObject({ isPersonalEmail: true, valid: true });
    expect(await verifyEmail('ann@example.test', dns)).toMatchObject({ isPersonalEmail: false });
  });

  test('a likely typo of a big provider is invalid and suggests the correction', async () => {
    expect(await verifyEmail('ann@gmial.com', dns)).toMatchObject({
      isTypo: true,
      valid: false,
      suggestion: 'ann@gmail.com',
      reasons: ['possible_typo'],
    });
    for (const [domain, fixed] of [
      ['hotmial.com', 'hotmail.com'],
      ['yaho.com', 'yahoo.com'],
      ['gmail.con', 'gmail.com'],
      ['GMAIL.CO', 'gmail.com'],
    ]) {
      expect(await verifyEmail(`ann@${domain}`, dns)).toMatchObject({ isTypo: true, suggestion: `ann@${fixed}` });
    }
  });

  test('known good and unrelated domains are not typos', async () => {
    for (const domain of ['gmail.com', 'email.com', 'mail.com', 'hotmail.fr', 'acme.com', 'example.test']) {
      const result = await verifyEmail(`ann@${domain}`, dns);
      expect(result.isTypo).toBe(false);
      expect(result.suggestion).toBeUndefined();
    }
  });

  test('a domain with no records does not exist and cannot receive mail', async () => {
    expect(await verifyEmail('ann@nowhere.test', dns)).toMatchObject({
      valid: false,
      domainExists: false,
      hasMxRecords: false,
      hasWebsite: false,
      reasons: ['domain_not_found', 'no_mx_records', 'no_website'],
    });
  });

  test('a domain without MX records is invalid', async () => {
    expect(await verifyEmail('ann@webonly.test', dns)).toMatchObject({
      valid: false,
      domainExists: true,
      hasWebsite: true,
      hasMxRecords: false,
      reasons: ['no_mx_records'],
    });
  });

  test('a null MX (RFC 7505) means no mail although the domain exists', async () => {
    expect(await verifyEmail('ann@nullmx.test', dns)).toMatchObject({
      valid: false,
      domainExists: true,
      hasMxRecords: false,
    });
  });

  test('a mail-only domain is valid without a website', async () => {
    expect(await verifyEmail('ann@mailonly.test', dns)).toMatchObject({
      valid: true,
      domainExists: true,
      hasWebsite: false,
      reasons: ['no_website'],
    });
  });

  test('NS records alone make a domain exist', async () => {
    expect(await verifyEmail('ann@delegated.test', dns)).toMatchObject({
      domainExists: true,
      hasMxRecords: false,
      valid: false,
    });
  });

  test('DNS timeouts and failures are a dns_error answer, never an error, and never domain_not_found', async () => {
    const started = Date.now();
    for (const domain of ['slow.test', 'broken.test']) {
      expect(await verifyEmail(`ann@${domain}`, dns)).toMatchObject({
        valid: false,
        domainExists: false,
        hasMxRecords: false,
        hasWebsite: false,
        reasons: ['dns_error', 'no_website'],
      });
    }
    expect(Date.now() - started).toBeLessThan(3000);
    const failing: DnsLookup = {
      resolveMx: () => Promise.reject(new Error('boom')),
      resolveAny: () => {
        throw new Error('boom');
      },
    };
    const unreachable = await verifyEmail('ann@example.test', failing);
    expect(unreachable).toMatchObject({ valid: false, domainExists: false });
    expect(unreachable.reasons).toContain('dns_error');
    expect(unreachable.reasons).not.toContain('domain_not_found');
  });

  test('the address is echoed back trimmed', async () => {
    expect((await verifyEmail('  ann@example.test ', dns)).email).toBe('ann@example.test');
  });
});
