import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { SERVICES } from '../services/registry.js';
import { platform } from './support/client.js';
import { freePort, portOpen, serviceReady, ROOT, startPlatform, stopProcess, waitFor } from './support/processes.js';

/** Runs `npm run start:service -- <args>` (bin/platform.ts) and returns its exit code and output. */
async function runToExit(args: string[], env: Record<string, string>, logName: string) {
  const child: ChildProcess = startPlatform(args, { ...env }, logName);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  // The log stream may flush after the exit event.
  await new Promise((r) => setTimeout(r, 50));
  return { code, output: readFileSync(path.join(ROOT, '.test-run', 'logs', `${logName}.log`), 'utf8') };
}

describe('starting services by name (the registry)', () => {
  test('a registered service with no code yet exits non-zero with a clear message instead of idling', async () => {
    const empty = SERVICES.find((s) => !s.load);
    if (!empty) return; // every registered service has code now; the refusal is kept for the next one
    const { code, output } = await runToExit([empty.name], platform.env, 'start-empty');
    expect(code).toBe(1);
    expect(output).toContain(`cannot start ${empty.name}: registered but has no code yet`);
  });

  test('a taken port stops the gateway and an RPC service with one line naming the port', async () => {
    const blocker = net.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      const gateway = await runToExit(['gateway'], { ...platform.env, PORT: String(port) }, 'start-port-taken');
      expect(gateway.code).toBe(1);
      expect(gateway.output).toContain(`failed to start: port ${port} is already in use (gateway)`);
      const identity = await runToExit(
        ['identity'],
        { ...platform.env, IDENTITY_PORT: String(port) },
        'start-rpc-port-taken',
      );
      expect(identity.code).toBe(1);
      expect(identity.output).toContain(`failed to start: port ${port} is already in use (identity rpc)`);
      expect(identity.output).not.toMatch(/\n\s+at /);
    } finally {
      blocker.close();
    }
  });

  test('a distributed gateway without SESSION_SECRET refuses to start, naming the variable', async () => {
    // A random secret per process would make each replica refuse the sessions the others signed.
    const port = await freePort();
    const env = { ...platform.env, SESSION_SECRET: '', PORT: String(port) };
    const { code, output } = await runToExit(['gateway'], env, 'start-no-session-secret');
    expect(code).toBe(1);
    expect(output).toContain('config error: SESSION_SECRET is required when DATABASE_URL is set');
    expect(output).not.toMatch(/\n\s+at /);
    // Refused before anything started: the gateway never listened.
    expect(output).not.toContain('gateway listening');
    expect(await portOpen(port)).toBe(false);
  });

  test('embedded mode with a taken gateway port stops with one line and leaves no PostgreSQL running', async () => {
    const blocker = net.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    const pgPort = await freePort();
    try {
      const env: Record<string, string> = {
        ...Object.fromEntries(Object.keys(platform.env).map((k) => [k, ''])),
        SERVICE_TOKEN: '',
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'svc-port-taken-')),
        PORT: String(port),
        EMBEDDED_PG_PORT: String(pgPort),
        EMBEDDED_SMTP_PORT: String(await freePort()),
        INBOUND_SMTP_PORT: String(await freePort()),
      };
      for (const s of SERVICES.filter((x) => !x.edge)) env[`${s.name.toUpperCase()}_PORT`] = String(await freePort());
      const { code, output } = await runToExit([], env, 'start-embedded-port-taken');
      expect(code).toBe(1);
      expect(output).toContain(`failed to start: port ${port} is already in use (gateway)`);
      expect(output).toContain('embedded PostgreSQL started');
      // Stopped before the process exited: the next `npm start` finds the port free, nothing is orphaned.
      expect(await portOpen(pgPort)).toBe(false);
    } finally {
      blocker.close();
    }
  }, 60_000);

  test('as root, a folder the postgres user cannot enter stops embedded mode with one line', async () => {
    if (process.getuid?.() !== 0) return; // only root runs PostgreSQL as another user
    const closed = mkdtempSync(path.join(tmpdir(), 'closed-')); // mode 700
    const { DATABASE_URL: _db, ...env } = platform.env;
    const { code, output } = await runToExit([], { ...env, DATA_DIR: path.join(closed, 'data') }, 'start-closed');
    expect(code).toBe(1);
    expect(output.trim()).toBe(
      `failed to start: embedded PostgreSQL runs as the postgres user, which cannot enter ${closed}: ` +
        `run \`chmod o+x ${closed}\`, or clone the project outside it (e.g. under /srv), or set DATABASE_URL`,
    );
  });

  test('an unknown name exits non-zero and lists the registered services', async () => {
    const { code, output } = await runToExit(['billing'], platform.env, 'start-billing');
    expect(code).toBe(1);
    expect(output).toContain('unknown service(s): billing; known: identity, contacts, messaging');
  });

  test("a bad value of a service's own variable stops that service with one line", async () => {
    const env = { ...platform.env, SMTP_POOL_SIZE: 'many' };
    const { code, output } = await runToExit(['messaging'], env, 'start-bad-messaging');
    expect(code).toBe(1);
    expect(output.trim()).toBe(
      'config error: invalid environment variable SMTP_POOL_SIZE: Expected number, received nan',
    );
  });

  test("a service does not validate another service's variables; platform-wide ones stop every service", async () => {
    const env = { ...platform.env, SMTP_POOL_SIZE: 'many', IDENTITY_PORT: String(await freePort()) };
    const identity = startPlatform(['identity'], env, 'start-identity-ignores-messaging-env');
    try {
      await waitFor('identity', () => serviceReady(Number(env.IDENTITY_PORT)), identity);
    } finally {
      await stopProcess(identity);
    }
    const bad = await runToExit(['identity'], { ...env, RPC_TIMEOUT_MS: 'soon' }, 'start-bad-platform-env');
    expect(bad.code).toBe(1);
    expect(bad.output).toMatch(/^config error: invalid environment variable RPC_TIMEOUT_MS: /);
  });
});
