import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestDnsServer, type TestDnsServer, type TestZoneRecords } from '@svc/lib/test-dns-server';
import { assertPublicUrl, deliverWebhook, hostResolver, isPrivateAddress, signature } from './webhook.js';

describe('webhook safety and signature', () => {
  test('private, loopback, link-local and mapped addresses are private; public ones are not', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '::1',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '0.0.0.0',
    ]) {
      expect([a, isPrivateAddress(a)]).toEqual([a, true]);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111'])
      expect([a, isPrivateAddress(a)]).toEqual([a, false]);
    // IPv6 forms that carry an IPv4 address (an AAAA record can give them): NAT64, 6to4, compatible, SIIT.
    for (const a of ['64:ff9b::a9fe:a9fe', '64:ff9b::7f00:1', '2002:a00:1::1', '::7f00:1', '::ffff:0:a9fe:a9fe']) {
      expect([a, isPrivateAddress(a)]).toEqual([a, true]);
    }
    for (const a of ['64:ff9b:1::5', 'fec0::1']) expect([a, isPrivateAddress(a)]).toEqual([a, true]);
    for (const a of ['64:ff9b::808:808', '2002:808:808::1', '::ffff:0:808:808'])
      expect([a, isPrivateAddress(a)]).toEqual([a, false]);
  });

  test('a host is checked by what it resolves to, not as written', async () => {
    await expect(assertPublicUrl('http://127.0.0.1:8080/x')).rejects.toThrow('private');
    await expect(assertPublicUrl('http://[::1]/x')).rejects.toThrow('private');
    await expect(assertPublicUrl('http://localhost/x')).rejects.toThrow('private');
    const resolve = (async () => [{ address: '10.0.0.5', family: 4 }]) as never;
    await expect(assertPublicUrl('https://hooks.example.com/x', resolve)).rejects.toThrow('10.0.0.5');
    const pub = (async () => [{ address: '93.184.216.34', family: 4 }]) as never;
    await expect(assertPublicUrl('https://hooks.example.com/x', pub)).resolves.toBeUndefined();
  });

  test('signature is v1= HMAC-SHA256 of "<timestamp>.<body>"', () => {
    const want = createHmac('sha256', 's3cret').update('1700000000.{"a":1}').digest('hex');
    expect(signature('s3cret', '1700000000', '{"a":1}')).toBe(`v1=${want}`);
  });
});

describe('webhook delivery through a real resolver (loopback DNS server)', () => {
  const zone: Record<string, TestZoneRecords> = {};
  let dns: TestDnsServer;
  const servers: Server[] = [];
  const request = { method: 'POST', headers: {}, payload: { a: 1 }, deliveryId: 'd1', secret: 's3cret' };
  const opts = { timeoutMs: 2000, maxAttempts: 3, retryBaseMs: 10 };

  /** An HTTP receiver on 127.0.0.1 answering with `answer` (by request number, from 1). */
  async function receiver(answer: (n: number, req: IncomingMessage, res: ServerResponse) => void) {
    const got: { host?: string; signature?: string; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        got.push({ host: req.headers.host, signature: req.headers['x-webhook-signature'] as string, body });
        answer(got.length, req, res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    return { port: (server.address() as AddressInfo).port, got };
  }

  beforeAll(async () => {
    dns = await startTestDnsServer(zone);
  });
  afterAll(async () => {
    await dns.close();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  });

  test('a name resolving to loopback is refused without WEBHOOK_ALLOW_PRIVATE; nothing is sent', async () => {
    zone['hooks-private.test'] = { A: ['127.0.0.1'] };
    const r = await receiver((_n, _req, res) => res.end('ok'));
    const resolve = hostResolver([dns.address]);
    const out = await deliverWebhook(
      { ...request, url: `http://hooks-private.test:${r.port}/in` },
      { ...opts, allowPrivate: false, resolve },
    );
    expect(out).toMatchObject({ ok: false, attempts: 0 });
    expect(out.error).toContain('private address (127.0.0.1)');
    expect(r.got).toHaveLength(0);
  });

  test('resolved once: every attempt connects to the checked address, even when the name moves', async () => {
    zone['hooks-moving.test'] = { A: ['127.0.0.1'] };
    let lookups = 0;
    const real = hostResolver([dns.address]);
    const resolve = async (host: string) => {
      lookups++;
      return real(host);
    };
    const r = await receiver((n, _req, res) => {
      // After the first attempt the name points elsewhere (a rebinding); the retry must not follow it.
      zone['hooks-moving.test'] = { A: ['10.9.9.9'] };
      res.statusCode = n === 1 ? 503 : 200;
      res.end(n === 1 ? 'busy' : 'ok');
    });
    const out = await deliverWebhook(
      { ...request, url: `http://hooks-moving.test:${r.port}/in` },
      { ...opts, allowPrivate: true, resolve },
    );
    expect(out).toMatchObject({ ok: true, status: 200, attempts: 2, response: 'ok' });
    expect(lookups).toBe(1);
    expect(r.got.map((g) => g.host)).toEqual([`hooks-moving.test:${r.port}`, `hooks-moving.test:${r.port}`]);
    const [t, body] = [r.got[1].signature, r.got[1].body];
    expect(body).toBe('{"a":1}');
    expect(t).toMatch(/^v1=[0-9a-f]{64}$/);
  });

  test('a redirect is not followed (to a private address or anywhere): the 3xx fails the attempts', async () => {
    const inner = await receiver((_n, _req, res) => res.end('should not be reached'));
    zone['hooks-redirect.test'] = { A: ['127.0.0.1'] };
    const r = await receiver((_n, _req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${inner.port}/admin` });
      res.end();
    });
    const out = await deliverWebhook(
      { ...request, url: `http://hooks-redirect.test:${r.port}/in` },
      { ...opts, allowPrivate: true, resolve: hostResolver([dns.address]) },
    );
    expect(out).toMatchObject({ ok: false, status: 302, attempts: 3, error: 'receiver answered 302' });
    expect(inner.got).toHaveLength(0);
  });

  test('an answer with NUL or a surrogate pair cut at 1000 characters is kept as storable text', async () => {
    const r = await receiver((n, _req, res) => {
      res.statusCode = n === 1 ? 500 : 200;
      res.end(n === 1 ? `${'a'.repeat(999)}\u{1F600}b` : 'ok\u0000done');
    });
    const out = await deliverWebhook(
      { ...request, url: `http://127.0.0.1:${r.port}/in` },
      { ...opts, allowPrivate: true, maxAttempts: 1 },
    );
    // PostgreSQL's jsonb refuses both NUL and a lone surrogate (the step's output could not be written).
    expect(out.response).toBe(`${'a'.repeat(999)}\ufffd`);
    const second = await deliverWebhook(
      { ...request, url: `http://127.0.0.1:${r.port}/in` },
      { ...opts, allowPrivate: true, maxAttempts: 1 },
    );
    expect(second).toMatchObject({ ok: true, response: 'ok\ufffddone' });
  });

  test('a 2xx whose body is long or never ends is answered by its first 1000 characters, not the timeout', async () => {
    const r = await receiver((_n, _req, res) => {
      res.writeHead(200);
      res.write('y'.repeat(1500)); // and nothing more: the answer never ends
    });
    const started = Date.now();
    const out = await deliverWebhook(
      { ...request, url: `http://127.0.0.1:${r.port}/in` },
      { ...opts, allowPrivate: true, maxAttempts: 1 },
    );
    expect(out).toMatchObject({ ok: true, status: 200, attempts: 1, response: 'y'.repeat(1000) });
    expect(Date.now() - started).toBeLessThan(opts.timeoutMs);
  });

  test('a name that does not resolve fails without an attempt', async () => {
    const out = await deliverWebhook(
      { ...request, url: 'http://nowhere.test/in' },
      { ...opts, allowPrivate: true, resolve: hostResolver([dns.address]) },
    );
    expect(out).toMatchObject({ ok: false, attempts: 0 });
    expect(out.error).toContain('did not resolve');
  });
});
