import { createDnsResolver } from './dns-resolver.js';
import { startTestDnsServer, type TestDnsServer } from '@svc/lib/test-dns-server';

let server: TestDnsServer;

beforeAll(async () => {
  server = await startTestDnsServer({
    'example.test': {
      A: ['192.0.2.10'],
      MX: [
        { exchange: 'mx2.example.test', priority: 20 },
        { exchange: 'mx1.example.test', priority: 10 },
      ],
      NS: ['ns1.example.test'],
      TXT: [['v=spf1 -all'], ['v=DKIM1; k=rsa; p=', 'MIIBIjANBgkq']],
    },
    'v6.example.test': { AAAA: ['2001:db8::1'] },
    'empty.example.test': {},
    'slow.example.test': { silent: true },
    'broken.example.test': { servfail: true },
  });
});

afterAll(async () => {
  await server.close();
});

describe('DNS resolver (DNS_SERVERS on loopback)', () => {
  const resolver = () => createDnsResolver({ servers: [server.address], timeoutMs: 300 });

  test('MX exchanges come back ordered by priority', async () => {
    expect(await resolver().resolveMx('example.test')).toEqual(['mx1.example.test', 'mx2.example.test']);
  });

  test('resolveAny is true when an A or an AAAA record exists', async () => {
    const r = resolver();
    expect(await r.resolveAny('example.test')).toBe(true);
    expect(await r.resolveAny('v6.example.test')).toBe(true);
    expect(await r.resolveAny('empty.example.test')).toBe(false);
    expect(await r.resolveAny('missing.test')).toBe(false);
  });

  test('NS records are listed', async () => {
    expect(await resolver().resolveNs('example.test')).toEqual(['ns1.example.test']);
  });

  test('TXT records join their character-strings', async () => {
    expect((await resolver().resolveTxt('example.test')).sort()).toEqual([
      'v=DKIM1; k=rsa; p=MIIBIjANBgkq',
      'v=spf1 -all',
    ]);
  });

  test('an absent name or record type is an empty answer', async () => {
    const r = resolver();
    expect(await r.resolveMx('missing.test')).toEqual([]);
    expect(await r.resolveMx('empty.example.test')).toEqual([]);
    expect(await r.resolveTxt('missing.test')).toEqual([]);
    expect(await r.resolveTxt('empty.example.test')).toEqual([]);
  });

  test('timeouts and server failures reject for MX, A/AAAA and NS lookups, within the bound', async () => {
    const r = resolver();
    const started = Date.now();
    await expect(r.resolveMx('slow.example.test')).rejects.toThrow();
    await expect(r.resolveAny('slow.example.test')).rejects.toThrow();
    await expect(r.resolveNs('broken.example.test')).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(3000);
  });

  test('TXT lookups reject on timeouts and server failures, so "absent" is never guessed', async () => {
    const r = resolver();
    await expect(r.resolveTxt('slow.example.test')).rejects.toThrow();
    await expect(r.resolveTxt('broken.example.test')).rejects.toThrow();
  });
});
