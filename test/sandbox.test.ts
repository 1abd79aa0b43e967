import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  call,
  expectEnvelope,
  newTenant,
  platform,
  sessionCookie,
  type Answer,
  type Tenant,
  uniqueEmail,
} from './support/client.js';
import { receivedMail } from './support/messaging.js';
import { freePort, httpOk, startPlatform, stopProcess, waitFor } from './support/processes.js';

// The sandbox sender (sandbox@sandbox.localhost) exists only in embedded mode with the local SMTP sink.
// Here it must be refused: the shared test platform is distributed (DATABASE_URL set) and relays to SMTP_URL,
// and an embedded platform started with SMTP_URL set relays too. Acceptance is in test/dev-mail.test.ts.

const SANDBOX = 'sandbox@sandbox.localhost';

function expectSandboxRefused(res: Answer): void {
  expectEnvelope(res, 403, 'INTERNAL_SERVER_ERROR');
  expect(res.body.error.details).toMatchObject({ reason: 'sandbox_unavailable', domain: 'sandbox.localhost' });
  expect(res.body.error.message).toContain(SANDBOX);
}

describe('the sandbox sender in distributed mode', () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await newTenant();
  });

  test('POST /v1/send from the sandbox sender is a 403 and nothing is relayed', async () => {
    const to = uniqueEmail('sandbox-refused');
    for (const from of [SANDBOX, 'hello@sandbox.localhost', { email: SANDBOX, name: 'Sandbox' }]) {
      expectSandboxRefused(
        await call('POST', '/v1/send', { to, from, subject: 'Hi', body: '<p>Hi</p>' }, { key: t.secretKey }),
      );
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(await receivedMail(to)).toEqual([]);
  });

  test('a template cannot name the sandbox sender', async () => {
    const template = {
      name: 'sandbox',
      subject: 'Hi',
      body: '<p>Hi</p>',
      type: 'TRANSACTIONAL',
      from: SANDBOX,
    };
    const created = await call('POST', '/templates', template, { key: t.secretKey });
    expect(created.status).toBe(403);
    expect(created.body.error.details).toMatchObject({ reason: 'sandbox_unavailable' });
    const list = await call('GET', '/templates', undefined, { key: t.secretKey });
    expect(JSON.stringify(list.body)).not.toContain('sandbox.localhost');
  });

  test('sandbox.localhost cannot be added as a sender domain (reserved)', async () => {
    for (const domain of ['sandbox.localhost', 'mail.sandbox.localhost']) {
      const res = await call('POST', '/domains', { domain }, { key: t.secretKey });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
    }
    expect(JSON.stringify((await call('GET', '/domains', undefined, { key: t.secretKey })).body)).not.toContain(
      'sandbox',
    );
  });

  test('an unverified domain 403 does not mention the sandbox here', async () => {
    const res = await call(
      'POST',
      '/v1/send',
      { to: uniqueEmail('x'), from: 'a@not-verified.example.com', subject: 'Hi', body: 'Hi' },
      { key: t.secretKey },
    );
    expectEnvelope(res, 403, 'INTERNAL_SERVER_ERROR');
    expect(res.body.error.details.reason).toBe('domain_not_verified');
    expect(JSON.stringify(res.body)).not.toContain('sandbox');
  });
});

describe('the sandbox sender in embedded mode with SMTP_URL set', () => {
  let child: ChildProcess;
  let dataDir: string;
  let baseUrl: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-sandbox-relay-'));
    const port = await freePort();
    const env: Record<string, string> = {
      DATABASE_URL: '',
      NATS_URL: '',
      REDIS_URL: '',
      SERVICE_TOKEN: '',
      SESSION_SECRET: '',
      // A relay: the tests' sink stands in for a real SMTP server.
      SMTP_URL: platform.env.SMTP_URL,
      DATA_DIR: dataDir,
      PORT: String(port),
      BIND_HOST: '127.0.0.1',
      EMBEDDED_PG_PORT: String(await freePort()),
      EMBEDDED_SMTP_PORT: String(await freePort()),
      PUBLIC_URL: `http://localhost:${port}`,
    };
    for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS'])
      env[`${s}_PORT`] = String(await freePort());
    child = startPlatform([], env, 'embedded-sandbox-relay');
    baseUrl = `http://127.0.0.1:${port}`;
    await waitFor('embedded platform with SMTP_URL', () => httpOk(`${baseUrl}/healthz`), child, 120_000);
  }, 180_000);

  afterAll(async () => {
    if (child) await stopProcess(child);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('POST /v1/send from the sandbox sender is a 403; nothing reaches the relay', async () => {
    const signup = await call(
      'POST',
      '/auth/signup',
      { email: uniqueEmail('relay'), password: 'password-123' },
      { baseUrl },
    );
    const cookie = sessionCookie(signup.headers);
    const project = await call('POST', '/users/@me/projects', { name: 'relay' }, { baseUrl, cookie });
    const to = uniqueEmail('relay-sandbox');
    const res = await call(
      'POST',
      '/v1/send',
      { to, from: SANDBOX, subject: 'Hi', body: '<p>Hi</p>' },
      { baseUrl, key: project.body.secretKey },
    );
    expectSandboxRefused(res);
    await new Promise((r) => setTimeout(r, 300));
    expect(await receivedMail(to)).toEqual([]);
  });
});
