import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSmtpSink } from '@svc/messaging';

/**
 * The tests' SMTP server (smtp-server on loopback), started by the global setup. Recipient
 * rules make failures reproducible: `bounce-*@` answers 550 (permanent), `tempfail-*@`
 * answers 451 to the first attempt and accepts the next. An HTTP control port lets test
 * files, which run in their own module registry, read what arrived.
 */
export interface TestSmtpSink {
  url: string;
  controlUrl: string;
  close(): Promise<void>;
}

export async function startTestSmtpSink(): Promise<TestSmtpSink> {
  const attempts = new Map<string, number>();
  const sink = await startSmtpSink({
    keep: 20_000,
    onRecipient(address) {
      const local = address.toLowerCase().split('@')[0];
      const n = (attempts.get(address.toLowerCase()) ?? 0) + 1;
      attempts.set(address.toLowerCase(), n);
      if (local.startsWith('bounce-')) return { code: 550, message: '5.1.1 Mailbox does not exist' };
      if (local.startsWith('tempfail-') && n === 1) return { code: 451, message: '4.7.1 Greylisted, try again later' };
      return undefined;
    },
  });
  const control = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const to = url.searchParams.get('to')?.toLowerCase();
    res.setHeader('content-type', 'application/json');
    if (url.pathname === '/messages') {
      const found = sink.messages().filter((m) => !to || m.to.some((t) => t.toLowerCase() === to));
      res.end(
        JSON.stringify(
          found.map((m) => ({
            id: m.id,
            from: m.from,
            to: m.to,
            raw: m.raw.toString('base64'),
            receivedAt: m.receivedAt,
          })),
        ),
      );
    } else if (url.pathname === '/attempts') {
      res.end(JSON.stringify({ attempts: to ? (attempts.get(to) ?? 0) : 0 }));
    } else if (url.pathname === '/count') {
      res.end(JSON.stringify({ count: sink.messages().length }));
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: sink.url,
    controlUrl: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    async close() {
      await new Promise<void>((resolve) => control.close(() => resolve()));
      await sink.close();
    },
  };
}
