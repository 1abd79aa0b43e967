import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestDnsServer, type TestZoneRecords } from '@svc/lib/test-dns-server';

/**
 * The tests' DNS server (dns2 on loopback, the platform's DNS_SERVERS). Test files publish
 * records through its HTTP control port: `POST /records {name, type, value}` adds one,
 * `DELETE /records?name=` removes a name.
 */
export interface TestDns {
  address: string;
  controlUrl: string;
  close(): Promise<void>;
}

/** TXT strings are at most 255 bytes each; longer values (DKIM keys) span several. */
const chunks = (value: string) => value.match(/.{1,255}/gs) ?? [''];

export async function startTestDns(): Promise<TestDns> {
  const zone: Record<string, TestZoneRecords> = {};
  const server = await startTestDnsServer(zone);
  const control = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (url.pathname === '/records' && req.method === 'POST') {
        const { name, type, value } = JSON.parse(body) as {
          name: string;
          type: string;
          value: string | { exchange: string; priority: number };
        };
        const records = (zone[name.toLowerCase().replace(/\.$/, '')] ??= {});
        if (type === 'TXT') (records.TXT ??= []).push(chunks(String(value)));
        else if (type === 'MX') (records.MX ??= []).push(value as { exchange: string; priority: number });
        else if (type === 'A' || type === 'AAAA' || type === 'NS') (records[type] ??= []).push(String(value));
        res.end('{}');
      } else if (url.pathname === '/records' && req.method === 'DELETE') {
        delete zone[(url.searchParams.get('name') ?? '').toLowerCase()];
        res.end('{}');
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', () => resolve()));
  return {
    address: server.address,
    controlUrl: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    async close() {
      await new Promise<void>((resolve) => control.close(() => resolve()));
      await server.close();
    },
  };
}
