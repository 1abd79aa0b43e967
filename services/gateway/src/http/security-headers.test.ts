import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { parseTrustProxy } from '@svc/lib/trust-proxy';
import { securityHeaders } from './security-headers.js';

/** An app with the headers, trusting proxies as the gateway does (TRUST_PROXY), on a loopback port. */
async function served(opts: { maxAgeSeconds: number; publicUrl: string; trustProxy?: string }) {
  const app = express();
  app.set('trust proxy', (opts.trustProxy && parseTrustProxy(opts.trustProxy)) || false);
  app.use(securityHeaders(opts));
  app.get('/', (_req, res) => {
    res.json({ ok: true });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as AddressInfo).port;
  /** The Strict-Transport-Security header answered to a request with this Host (and forwarding headers). */
  const hsts = (headers: Record<string, string>) =>
    new Promise<string | undefined>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', headers }, (res) => {
          res.resume();
          resolve(res.headers['strict-transport-security'] as string | undefined);
        })
        .on('error', reject);
    });
  return { hsts, close: () => new Promise((r) => server.close(r)) };
}

const YEAR = 'max-age=31536000';

describe('Strict-Transport-Security (HSTS_MAX_AGE)', () => {
  test('never on plain http from localhost (npm start), with or without a forwarded https', async () => {
    const s = await served({ maxAgeSeconds: 31536000, publicUrl: 'http://localhost:8080' });
    try {
      expect(await s.hsts({ host: 'localhost:8080' })).toBeUndefined();
      expect(await s.hsts({ host: 'mail.example.com' })).toBeUndefined();
      // TRUST_PROXY unset: anyone may send X-Forwarded-Proto, so it says nothing.
      expect(await s.hsts({ host: 'mail.example.com', 'x-forwarded-proto': 'https' })).toBeUndefined();
    } finally {
      await s.close();
    }
  });

  test('over https through a trusted proxy; not for a loopback host even then', async () => {
    const s = await served({ maxAgeSeconds: 31536000, publicUrl: 'http://localhost:8080', trustProxy: 'loopback' });
    try {
      expect(await s.hsts({ host: 'mail.example.com', 'x-forwarded-proto': 'https' })).toBe(YEAR);
      expect(await s.hsts({ host: 'mail.example.com', 'x-forwarded-proto': 'http' })).toBeUndefined();
      for (const host of ['localhost', 'app.localhost:8443', '127.0.0.1:8080', '[::1]:8080']) {
        expect(await s.hsts({ host, 'x-forwarded-proto': 'https' })).toBeUndefined();
      }
    } finally {
      await s.close();
    }
  });

  test('whenever PUBLIC_URL is https (a TLS proxy in front); HSTS_MAX_AGE=0 turns it off', async () => {
    const on = await served({ maxAgeSeconds: 600, publicUrl: 'https://mail.example.com' });
    const off = await served({ maxAgeSeconds: 0, publicUrl: 'https://mail.example.com', trustProxy: 'loopback' });
    try {
      expect(await on.hsts({ host: 'mail.example.com' })).toBe('max-age=600');
      expect(await on.hsts({ host: 'localhost:8080' })).toBeUndefined();
      expect(await off.hsts({ host: 'mail.example.com', 'x-forwarded-proto': 'https' })).toBeUndefined();
    } finally {
      await Promise.all([on.close(), off.close()]);
    }
  });
});
