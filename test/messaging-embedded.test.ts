import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { call, eventually, expectEnvelope, newTenant, sessionCookie, uniqueEmail } from './support/client.js';
import { dnsServers, publishDns, uniqueDomain } from './support/messaging.js';
import { freePort, httpOk, startPlatform, stopProcess, waitFor } from './support/processes.js';

interface DevMailAnswer {
  data: { to: string[]; subject: string; text: string; from: string }[];
}

/** Local addresses (hex, as /proc/net shows them) listening on a TCP port: how the process bound it. */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((f) => f[3] === '0A' && f[1]?.endsWith(`:${hexPort}`))
      .map((f) => f[1].split(':')[0]),
  );
}
const IPV4_LOOPBACK = '0100007F';
const IPV4_ANY = '00000000';

describe('GET /dev/mail', () => {
  test('is not served outside embedded mode', async () => {
    const t = await newTenant();
    expectEnvelope(await call('GET', '/dev/mail', undefined, { cookie: t.cookie }), 404, 'RESOURCE_NOT_FOUND');
  });

  describe('embedded mode with no SMTP_URL (BIND_HOST=0.0.0.0)', () => {
    let child: ChildProcess;
    let dataDir: string;
    let baseUrl: string;
    const env: Record<string, string> = {};

    beforeAll(async () => {
      dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-embedded-mail-'));
      const port = await freePort();
      Object.assign(env, {
        DATABASE_URL: '',
        NATS_URL: '',
        REDIS_URL: '',
        SMTP_URL: '',
        SERVICE_TOKEN: '',
        BIND_HOST: '0.0.0.0',
        DATA_DIR: dataDir,
        PORT: String(port),
        EMBEDDED_PG_PORT: String(await freePort()),
        EMBEDDED_SMTP_PORT: String(await freePort()),
        DNS_SERVERS: dnsServers(),
        WEBHOOK_ALLOW_PRIVATE: 'false',
        PUBLIC_URL: `http://localhost:${port}`,
      });
      for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS'])
        env[`${s}_PORT`] = String(await freePort());
      child = startPlatform([], env, 'embedded-mail');
      baseUrl = `http://127.0.0.1:${port}`;
      await waitFor('embedded platform', () => httpOk(`${baseUrl}/healthz`), child, 120_000);
    }, 180_000);

    afterAll(async () => {
      if (child) await stopProcess(child);
      rmSync(dataDir, { recursive: true, force: true });
    });

    /** A signed-up user with a project whose sender domain is verified. */
    async function sender(tag: string) {
      const signup = await call(
        'POST',
        '/auth/signup',
        { email: uniqueEmail(tag), password: 'password-123' },
        { baseUrl },
      );
      const cookie = sessionCookie(signup.headers);
      const project = await call('POST', '/users/@me/projects', { name: tag }, { baseUrl, cookie });
      const key: string = project.body.secretKey;
      const domain = uniqueDomain(tag);
      const created = await call('POST', '/domains', { domain, projectId: project.body.id }, { baseUrl, key });
      for (const r of created.body.records) await publishDns(r.name, r.type, r.value);
      expect((await call('GET', `/domains/${created.body.id}/verify`, undefined, { baseUrl, key })).body.status).toBe(
        'verified',
      );
      return { cookie, key, domain };
    }

    const devMail = async (cookie: string) =>
      (await call<DevMailAnswer>('GET', '/dev/mail', undefined, { baseUrl, cookie })).body;

    test('the local sink keeps sent mail; each signed-in user sees only the mail of their own projects', async () => {
      const [ann, bob] = await Promise.all([sender('ann'), sender('bob')]);
      const toAnn = uniqueEmail('ann-customer');
      const toBob = uniqueEmail('bob-customer');
      const annSent = { to: toAnn, from: `hello@${ann.domain}`, subject: 'Welcome {{email}}', body: '<p>It works</p>' };
      expect((await call('POST', '/v1/send', annSent, { baseUrl, key: ann.key })).status).toBe(200);
      const bobSent = { to: toBob, from: `news@${bob.domain}`, subject: 'Private to Bob', body: '<p>Bob only</p>' };
      expect((await call('POST', '/v1/send', bobSent, { baseUrl, key: bob.key })).status).toBe(200);

      expectEnvelope(await call('GET', '/dev/mail', undefined, { baseUrl }), 401, 'UNAUTHORIZED');
      const annMail = await eventually(
        async () => {
          const body = await devMail(ann.cookie);
          return body.data.length ? body : undefined;
        },
        15_000,
        "Ann's mail in the local sink",
      );
      expect(annMail.data).toHaveLength(1);
      expect(annMail.data[0]).toMatchObject({ to: [toAnn], subject: `Welcome ${toAnn}`, text: 'It works' });
      expect(annMail.data[0].from).toContain(`hello@${ann.domain}`);

      const bobMail = await eventually(
        async () => {
          const body = await devMail(bob.cookie);
          return body.data.length ? body : undefined;
        },
        15_000,
        "Bob's mail in the local sink",
      );
      expect(bobMail.data.map((m) => m.to)).toEqual([[toBob]]);
      // Both messages are in the sink by now; Ann still sees only hers.
      expect((await devMail(ann.cookie)).data.map((m) => m.to)).toEqual([[toAnn]]);

      const signup = await call(
        'POST',
        '/auth/signup',
        { email: uniqueEmail('nobody'), password: 'password-123' },
        { baseUrl },
      );
      const nobody = sessionCookie(signup.headers);
      expect((await devMail(nobody)).data).toEqual([]);
    });

    test('a campaign reaches its subscribed contacts (its audience streamed from contacts in-process)', async () => {
      const { key, cookie, domain } = await sender('camp');
      const api = (method: string, url: string, body?: unknown) => call(method, url, body, { baseUrl, key });
      const subscribed = [uniqueEmail('camp-a'), uniqueEmail('camp-b')];
      for (const email of subscribed)
        expect((await api('POST', '/contacts', { email, subscribed: true })).status).toBe(201);
      expect((await api('POST', '/contacts', { email: uniqueEmail('camp-off'), subscribed: false })).status).toBe(201);
      const draft = { name: 'News', subject: 'Embedded news', body: '<p>Hi</p>', from: `news@${domain}` };
      const created = await api('POST', '/campaigns', draft);
      expect(created.status).toBe(201);
      expect((await api('POST', `/campaigns/${created.body.data.id}/send`, {})).status).toBe(200);
      const mail = await eventually(
        async () => {
          const body = await devMail(cookie);
          return body.data.length >= 2 ? body : undefined;
        },
        30_000,
        'the campaign in the local sink',
      );
      expect(mail.data.map((m) => m.to[0]).sort()).toEqual([...subscribed].sort());
      expect(mail.data.every((m) => m.subject === 'Embedded news')).toBe(true);
    });

    test("the services' RPC ports listen on loopback only whatever BIND_HOST says; the gateway keeps BIND_HOST", () => {
      for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING']) {
        expect(listeningAddresses(Number(env[`${s}_PORT`]))).toEqual([IPV4_LOOPBACK]);
      }
      expect(listeningAddresses(Number(env.PORT))).toEqual([IPV4_ANY]);
    });

    test('WEBHOOK_ALLOW_PRIVATE unset: a WEBHOOK to 127.0.0.1, or a name resolving to it, fails unsent', async () => {
      const hits: string[] = [];
      const receiver = createServer((req, res) => {
        hits.push(req.url ?? '');
        res.end('ok');
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      const port = (receiver.address() as AddressInfo).port;
      try {
        const { key } = await sender('hooks');
        const api = (method: string, url: string, body?: unknown) => call(method, url, body, { baseUrl, key });
        const hostName = uniqueDomain('hooks');
        await publishDns(hostName, 'A', '127.0.0.1');
        for (const [url, address] of [
          [`http://127.0.0.1:${port}/as-written`, '127.0.0.1'],
          [`http://${hostName}:${port}/resolved`, '127.0.0.1'],
        ]) {
          const w = await api('POST', '/workflows', { name: `hook ${url}`, eventName: 'never' });
          const step = await api('POST', `/workflows/${w.body.id}/steps`, { type: 'WEBHOOK', config: { url } });
          const link = { fromStepId: w.body.steps[0].id, toStepId: step.body.id };
          expect((await api('POST', `/workflows/${w.body.id}/transitions`, link)).status).toBe(201);
          const email = uniqueEmail('hooked');
          expect((await api('POST', '/contacts', { email })).status).toBe(201);
          const started = await api('POST', `/workflows/${w.body.id}/executions`, { email });
          expect(started.status).toBe(201);
          const failed = await eventually(
            async () => {
              const e = await api('GET', `/workflows/${w.body.id}/executions/${started.body.id}`);
              return e.body.status === 'FAILED' ? e.body : undefined;
            },
            20_000,
            'execution FAILED',
          );
          expect(failed.error).toContain(`private address (${address}); refused`);
          expect(failed.steps.find((x: { stepType: string }) => x.stepType === 'WEBHOOK')).toMatchObject({
            status: 'FAILED',
            output: { attempts: 0 },
          });
        }
        expect(hits).toEqual([]);
      } finally {
        await new Promise((r) => receiver.close(r));
      }
    });
  });
});
