import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call, eventually, expectEnvelope, newTenant, uniqueEmail } from './support/client.js';
import { dnsServers, publishDns, uniqueDomain } from './support/messaging.js';
import { freePort, httpOk, startPlatform, stopProcess, waitFor } from './support/processes.js';

describe('GET /dev/mail', () => {
  test('is not served outside embedded mode', async () => {
    const t = await newTenant();
    expectEnvelope(await call('GET', '/dev/mail', undefined, { cookie: t.cookie }), 404, 'RESOURCE_NOT_FOUND');
  });

  test('embedded mode with no SMTP_URL: the local sink keeps sent mail and GET /dev/mail lists it (session auth)', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-embedded-mail-'));
    const port = await freePort();
    const env: Record<string, string> = {
      DATABASE_URL: '', NATS_URL: '', REDIS_URL: '', SMTP_URL: '',
      DATA_DIR: dataDir,
      PORT: String(port),
      EMBEDDED_PG_PORT: String(await freePort()),
      EMBEDDED_SMTP_PORT: String(await freePort()),
      DNS_SERVERS: dnsServers(),
      PUBLIC_URL: `http://localhost:${port}`,
    };
    for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS']) env[`${s}_PORT`] = String(await freePort());
    const child = startPlatform([], env, 'embedded-mail');
    try {
      const baseUrl = `http://127.0.0.1:${port}`;
      await waitFor('embedded platform', () => httpOk(`${baseUrl}/healthz`), child, 120_000);
      const signup = await call('POST', '/auth/signup', { email: uniqueEmail('dev'), password: 'password-123' }, { baseUrl });
      const cookie = signup.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
      const project = await call('POST', '/users/@me/projects', { name: 'Dev' }, { baseUrl, cookie });
      const key = project.body.secretKey;

      const domain = uniqueDomain('dev');
      const created = await call('POST', '/domains', { domain, projectId: project.body.id }, { baseUrl, key });
      for (const r of created.body.records) await publishDns(r.name, r.type, r.value);
      expect((await call('GET', `/domains/${created.body.id}/verify`, undefined, { baseUrl, key })).body.status).toBe('verified');

      const to = uniqueEmail('newcomer');
      const sent = await call('POST', '/v1/send', { to, from: `hello@${domain}`, subject: 'Welcome {{email}}', body: '<p>It works</p>' }, { baseUrl, key });
      expect(sent.status).toBe(200);

      expectEnvelope(await call('GET', '/dev/mail', undefined, { baseUrl }), 401, 'UNAUTHORIZED');
      const mail = await eventually(async () => {
        const res = await call('GET', '/dev/mail', undefined, { baseUrl, cookie });
        return res.body.data.length ? (res.body as { data: { to: string[]; subject: string; text: string; from: string }[] }) : undefined;
      }, 15_000, 'mail in the local sink');
      expect(mail.data[0]).toMatchObject({ to: [to], subject: `Welcome ${to}`, text: 'It works' });
      expect(mail.data[0].from).toContain(`hello@${domain}`);
    } finally {
      await stopProcess(child);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
