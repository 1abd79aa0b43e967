import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRpcClient } from '@svc/lib/rpc-client';
import { Health, HealthCheckResponse_ServingStatus } from '@svc/proto/grpc/health/v1/health_pb';
import { call, sessionCookie } from './support/client.js';
import { PrivatePostgres } from './support/private-postgres.js';
import { freePort, freeServicePorts, httpOk, ROOT, startPlatform, stopProcess, waitFor } from './support/processes.js';

// Ctrl-C (SIGINT) or SIGTERM while requests are in flight: the edge stops, the bus drains, the services
// stop, then embedded PostgreSQL; the process exits 0 and its last log line says it stopped, with no stack
// trace and no "Cannot use a pool after calling end" on the way.

const SANDBOX = 'sandbox@sandbox.localhost';

interface Load {
  done: number;
  failed: number;
  stop(): Promise<void>;
}

/** Concurrent loops of /v1/track, /v1/send (sandbox sender, queued to the local sink) and /contacts reads. */
function load(baseUrl: string, keys: { publicKey: string; secretKey: string }, loops = 8): Load {
  let running = true;
  const state = { done: 0, failed: 0 };
  const loop = async (i: number) => {
    for (let n = 0; running; n++) {
      const email = `load-${i}-${n}@example.com`;
      const request =
        n % 3 === 0
          ? call('POST', '/v1/track', { email, event: 'load' }, { baseUrl, key: keys.publicKey })
          : n % 3 === 1
            ? call(
                'POST',
                '/v1/send',
                { to: email, from: SANDBOX, subject: `Load ${n}`, body: '<p>Hello</p>' },
                { baseUrl, key: keys.secretKey },
              )
            : call('GET', '/contacts?limit=5', undefined, { baseUrl, key: keys.secretKey });
      // During shutdown requests are refused or cut: that is expected, the process must still stop cleanly.
      const ok = await request.then((r) => r.status < 300).catch(() => false);
      if (ok) state.done++;
      else state.failed++;
    }
  };
  const all = Promise.all(Array.from({ length: loops }, (_, i) => loop(i)));
  return {
    get done() {
      return state.done;
    },
    get failed() {
      return state.failed;
    },
    async stop() {
      running = false;
      await all;
    },
  };
}

async function exitOf(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return code;
}

/** The JSON log lines of a run, parsed; non-JSON lines (the banner) kept as text. */
function logLines(logName: string): { text: string; lines: Array<Record<string, unknown> | string> } {
  const text = readFileSync(path.join(ROOT, '.test-run', 'logs', `${logName}.log`), 'utf8');
  const lines = text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return l;
      }
    });
  return { text, lines };
}

describe('clean shutdown under load (embedded mode)', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-shutdown-'));
  let env: Record<string, string>;
  let keys: { publicKey: string; secretKey: string } | undefined;

  beforeAll(async () => {
    env = {
      DATABASE_URL: '',
      NATS_URL: '',
      REDIS_URL: '',
      SMTP_URL: '',
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      EMBEDDED_PG_PORT: String(await freePort()),
      METRICS_PORT: '',
      // Longer than the wait below: keep-alive clients busy with requests must not hold the gateway open.
      SHUTDOWN_TIMEOUT_MS: '60000',
    };
    for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS'])
      env[`${s}_PORT`] = String(await freePort());
  });

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`${signal} while requests are in flight: exit 0, last line "stopped", no stack trace`, async () => {
      const logName = `shutdown-${signal}`;
      const child = startPlatform([], { ...env }, logName);
      const baseUrl = `http://127.0.0.1:${env.PORT}`;
      let traffic: Load | undefined;
      try {
        await waitFor('embedded platform', () => httpOk(`${baseUrl}/healthz`), child, 120_000);
        if (!keys) {
          const signup = await call(
            'POST',
            '/auth/signup',
            { email: 'shutdown@example.com', password: 'password-123' },
            { baseUrl },
          );
          expect(signup.status).toBe(201);
          const cookie = sessionCookie(signup.headers);
          const project = await call('POST', '/users/@me/projects', { name: 'Shutdown' }, { baseUrl, cookie });
          expect(project.status).toBe(201);
          keys = { publicKey: project.body.publicKey, secretKey: project.body.secretKey };
        }
        traffic = load(baseUrl, keys);
        const started = traffic;
        await waitFor('traffic', async () => started.done >= 60, child, 60_000);
        child.kill(signal);
        // Answers after the signal say `Connection: close`, so the 8 keep-alive loops let go at once.
        const code = await exitOf(child, 30_000);
        await traffic.stop();
        // The log stream may flush after the exit event.
        await new Promise((r) => setTimeout(r, 100));
        const { text, lines } = logLines(logName);
        expect(code).toBe(0);
        const last = lines[lines.length - 1];
        expect(last).toMatchObject({ msg: 'stopped', signal });
        expect(text).not.toContain('Cannot use a pool after calling end');
        expect(text).not.toMatch(/\n\s+at |\\n\s+at /); // a stack trace, plain or inside a JSON log line
        const errors = lines.filter((l) => typeof l === 'object' && Number(l.level) >= 50);
        expect(errors).toEqual([]);
        expect(lines.some((l) => typeof l === 'object' && l.msg === 'shutting down')).toBe(true);
      } finally {
        await traffic?.stop();
        await stopProcess(child);
      }
    }, 240_000);
  }
});

describe('SIGTERM while PostgreSQL is frozen (one service per process, as in a pod)', () => {
  let pg: PrivatePostgres;
  beforeAll(async () => {
    pg = await PrivatePostgres.create();
    pg.start();
  });
  afterAll(() => pg.destroy());

  test('exits by itself (code 1, "shutdown timed out") before the grace period ends', async () => {
    const drainMs = 500;
    const timeoutMs = 2000;
    const env: Record<string, string> = {
      ...(await freeServicePorts()),
      DATABASE_URL: pg.url,
      NATS_URL: '',
      REDIS_URL: '',
      SMTP_URL: '',
      METRICS_PORT: '',
      SHUTDOWN_DRAIN_MS: String(drainMs),
      SHUTDOWN_TIMEOUT_MS: String(timeoutMs),
    };
    const logName = 'shutdown-frozen-postgres';
    const child = startPlatform(['contacts'], env, logName);
    const health = createRpcClient(Health, `http://127.0.0.1:${env.CONTACTS_PORT}`, { rpcTimeoutMs: 3000 });
    const ready = async () =>
      (await health.check({ service: '' })).status === HealthCheckResponse_ServingStatus.SERVING;
    try {
      // Ready: its pool holds connections to the server that is about to freeze.
      await waitFor('contacts', ready, child, 60_000);
      pg.freeze();
      await waitFor('contacts not ready', async () => !(await ready()), child, 20_000);
      child.kill('SIGTERM');
      // The kubelet's SIGKILL comes after the chart's terminationGracePeriodSeconds: drain + timeout + 10 s.
      const code = await exitOf(child, drainMs + timeoutMs + 10_000);
      await new Promise((r) => setTimeout(r, 100));
      const { lines } = logLines(logName);
      expect(child.signalCode).toBeNull();
      expect(code).toBe(1);
      expect(lines[lines.length - 1]).toMatchObject({
        msg: 'shutdown timed out; exiting with work left to other replicas',
      });
    } finally {
      pg.thaw();
      await stopProcess(child);
    }
  }, 120_000);
});
