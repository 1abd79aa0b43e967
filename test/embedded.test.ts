import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { call, sessionCookie } from './support/client.js';
import { freePort, httpOk, startPlatform, stopProcess, waitFor } from './support/processes.js';

/** The `npm start` path: one process, embedded PostgreSQL, in-process bus and limiter. */
describe('embedded mode', () => {
  test('boots with no servers configured and signs a user up', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-embedded-'));
    const port = await freePort();
    const env: Record<string, string> = {
      DATABASE_URL: '',
      NATS_URL: '',
      REDIS_URL: '',
      DATA_DIR: dataDir,
      PORT: String(port),
      EMBEDDED_PG_PORT: String(await freePort()),
    };
    for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS'])
      env[`${s}_PORT`] = String(await freePort());
    const child = startPlatform([], env, 'embedded');
    try {
      const baseUrl = `http://127.0.0.1:${port}`;
      await waitFor('embedded platform', () => httpOk(`${baseUrl}/healthz`), child, 120_000);
      const signup = await call(
        'POST',
        '/auth/signup',
        { email: 'first@example.com', password: 'password-123' },
        { baseUrl },
      );
      expect(signup.status).toBe(201);
      const cookie = sessionCookie(signup.headers);
      const project = await call('POST', '/users/@me/projects', { name: 'Embedded' }, { baseUrl, cookie });
      expect(project.body.secretKey).toMatch(/^sk_/);
      const tracked = await call(
        'POST',
        '/v1/track',
        { email: 'first@example.com', event: 'signup' },
        { baseUrl, key: project.body.publicKey },
      );
      expect(tracked.status).toBe(200);
      const contacts = await call('GET', '/contacts', undefined, { baseUrl, key: project.body.secretKey });
      expect(contacts.body.total).toBe(1);
      // The in-process bus cannot lose what it took: the relay deletes each row it published (no mark, no replay).
      const db = new pg.Client({
        connectionString: `postgres://postgres:postgres@127.0.0.1:${env.EMBEDDED_PG_PORT}/platform_contacts`,
      });
      await db.connect();
      try {
        const outbox = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox')).rows[0].n;
        const deadline = Date.now() + 10_000;
        while ((await outbox()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        expect(await outbox()).toBe(0);
      } finally {
        await db.end();
      }
    } finally {
      await stopProcess(child);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
