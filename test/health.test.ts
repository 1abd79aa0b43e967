import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import pg from 'pg';
import { AppError } from '@svc/lib/errors';
import { createRpcClient } from '@svc/lib/rpc-client';
import { Health, HealthCheckResponse_ServingStatus } from '@svc/proto/grpc/health/v1/health_pb';
import { call, eventually } from './support/client.js';
import { PrivatePostgres } from './support/private-postgres.js';
import {
  freePort,
  freeServicePorts,
  httpOk,
  ROOT,
  RPC_SERVICES,
  startPlatform,
  stopProcess,
  waitFor,
} from './support/processes.js';

/**
 * Health over a process's life, against a PostgreSQL server of the test's own:
 * `platform --migrate` and services that wait for it (MIGRATE_ON_START=false); the named gRPC health
 * checks; `/readyz` with each service's database and migrations; NOT_SERVING, `draining` and
 * `Connection: close` from SIGTERM until the process exits (SHUTDOWN_DRAIN_MS). Database outages:
 * test/faults-postgres.test.ts.
 */
// A PostgreSQL server of this test's own: the shared one may run out of connections under parallel runs.
const server = await PrivatePostgres.create();
server.start();
const DB = `health_${randomBytes(5).toString('hex')}`;
const { SERVING, NOT_SERVING } = HealthCheckResponse_ServingStatus;

// Log files named after this run's database: a previous run's file never answers for this one.
const logName = (name: string) => `${name}-${DB}`;
const log = (name: string) => readFileSync(path.join(ROOT, '.test-run', 'logs', `${logName(name)}.log`), 'utf8');
const health = (port: string | number) => createRpcClient(Health, `http://127.0.0.1:${port}`, { rpcTimeoutMs: 2000 });
const status = async (port: string | number, service = '') => (await health(port).check({ service })).status;
const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );

/** The HTTP status of a bodiless HTTP/2 POST (a call the server refuses before reading it). */
function httpStatus(port: string, path: string): Promise<number> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  return new Promise<number>((resolve, reject) => {
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc' });
    req.on('response', (headers) => resolve(Number(headers[':status'])));
    req.on('error', reject);
    req.end();
  }).finally(() => session.destroy());
}

async function baseEnv(): Promise<Record<string, string>> {
  return {
    DATABASE_URL: server.url,
    NATS_URL: '',
    REDIS_URL: '',
    SMTP_URL: '',
    SESSION_SECRET: 'health-test-session-secret',
    ...(await freeServicePorts()),
  };
}

afterAll(async () => {
  server.destroy();
});

test('MIGRATE_ON_START=false: a service waits, not serving, until `platform --migrate` has run', async () => {
  const env: Record<string, string> = { ...(await baseEnv()), MIGRATE_ON_START: 'false' };
  const segments = startPlatform(['segments'], env, logName('health-wait'));
  try {
    await waitFor(
      'the wait for migrations',
      async () => log('health-wait').includes('waiting for migrations'),
      segments,
    );
    // Still waiting: its RPC port answers health checks, alive but not ready.
    expect(await status(env.SEGMENTS_PORT, 'liveness')).toBe(SERVING);
    expect(await status(env.SEGMENTS_PORT)).toBe(NOT_SERVING);
    expect(segments.exitCode).toBeNull();

    const migrate = startPlatform(['--migrate', 'segments'], { ...env }, logName('health-migrate'));
    expect(await exited(migrate)).toBe(0);
    expect(log('health-migrate')).toContain('migrations done');

    await waitFor('segments', async () => (await status(env.SEGMENTS_PORT)) === SERVING, segments, 20_000);
    expect(log('health-wait')).toContain('migrations applied by the migration job');
    expect(await status(env.SEGMENTS_PORT, 'migrations')).toBe(SERVING);
    expect(await status(env.SEGMENTS_PORT, 'database')).toBe(SERVING);
    expect(await status(env.SEGMENTS_PORT, 'liveness')).toBe(SERVING);
    const unknown = await status(env.SEGMENTS_PORT, 'no-such-check').catch((err) => err);
    // NOT_FOUND, as the gRPC health protocol says for an unknown name (the client maps it to a 404 error).
    expect(unknown).toBeInstanceOf(AppError);
    expect(unknown).toMatchObject({ status: 404, message: expect.stringContaining('unknown health check') });

    // A second run has nothing left to apply and says so.
    const again = startPlatform(['--migrate', 'segments'], { ...env }, logName('health-migrate-again'));
    expect(await exited(again)).toBe(0);
    expect(log('health-migrate-again')).toMatch(/"service":"segments","applied":0/);
  } finally {
    await stopProcess(segments);
  }
}, 60_000);

test('startup mode: a replica is alive while migrations run or it waits for them, and ready only after', async () => {
  // A segments database of the test's own whose migrations are held back by the advisory lock they take,
  // as while a replica runs a migration longer than the startup probe allows.
  const name = `${DB}_slow`;
  const admin = new pg.Client({ connectionString: server.url.replace(/\/platform$/, '/postgres') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = server.url.replace(/\/platform$/, `/${name}`);
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  await holder.query("SELECT pg_advisory_lock(hashtext('schema_migrations'))");
  let released = false;
  const envs: Array<Record<string, string>> = [];
  for (let i = 0; i < 2; i++) envs.push({ ...(await baseEnv()), DATABASE_URL_SEGMENTS: url });
  // Two replicas starting at once: both wait for the lock.
  const replicas = envs.map((env, i) => startPlatform(['segments'], env, logName(`health-slow-${i}`)));
  try {
    for (const [i, env] of envs.entries()) {
      await waitFor(
        'liveness while migrations wait',
        async () => (await status(env.SEGMENTS_PORT, 'liveness').catch(() => undefined)) === SERVING,
        replicas[i],
        20_000,
      );
      expect(await status(env.SEGMENTS_PORT)).toBe(NOT_SERVING);
      expect(await status(env.SEGMENTS_PORT, 'migrations')).toBe(NOT_SERVING);
    }
    // Nothing but health is served yet: any other call is refused as unavailable (HTTP 503).
    expect(await httpStatus(envs[0].SEGMENTS_PORT, '/segments.v1.SegmentsService/ListSegments')).toBe(503);
    await holder.end();
    released = true;
    for (const [i, env] of envs.entries()) {
      await waitFor('ready', async () => (await status(env.SEGMENTS_PORT)) === SERVING, replicas[i], 20_000);
      expect(await status(env.SEGMENTS_PORT, 'liveness')).toBe(SERVING);
      expect(await status(env.SEGMENTS_PORT, 'migrations')).toBe(SERVING);
    }
    // One replica applied the migrations, the other found nothing left.
    const applied = [0, 1].filter((i) => log(`health-slow-${i}`).includes('migrations applied'));
    expect(applied).toHaveLength(1);
  } finally {
    if (!released) await holder.end();
    for (const r of replicas) await stopProcess(r);
  }
}, 60_000);

test('a bad option is refused before anything starts', async () => {
  const child = startPlatform(['--migrat'], await baseEnv(), logName('health-bad-option'));
  expect(await exited(child)).toBe(1);
  // The child's output reaches the log file after its exit event: polled, not read once.
  const refusal = 'unknown option(s): --migrat; known: --migrate';
  await eventually(async () => (log('health-bad-option').includes(refusal) ? true : undefined), 5000, refusal);
});

test('/readyz details each service; on SIGTERM: NOT_SERVING, "draining", Connection: close, serving', async () => {
  const port = await freePort();
  const env: Record<string, string> = { ...(await baseEnv()), PORT: String(port), SHUTDOWN_DRAIN_MS: '3000' };
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = startPlatform([], env, logName('health-drain'));
  try {
    await waitFor('platform', () => httpOk(`${baseUrl}/readyz`), child, 60_000);
    const ready = await call('GET', '/readyz', undefined, { baseUrl });
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'ok',
      checks: { ...Object.fromEntries(RPC_SERVICES.map((s) => [s, 'ok'])), bus: 'ok' },
      services: Object.fromEntries(RPC_SERVICES.map((s) => [s, { database: 'ok', migrations: 'ok' }])),
    });
    for (const s of RPC_SERVICES) expect(await status(env[`${s.toUpperCase()}_PORT`])).toBe(SERVING);
    expect(ready.headers.get('connection')).not.toBe('close');

    const exit = exited(child);
    child.kill('SIGTERM');
    await waitFor('draining', async () => (await status(env.CONTACTS_PORT)) === NOT_SERVING, child, 2000);
    // Every service of the process drains; the process is alive and still answers.
    for (const s of RPC_SERVICES) {
      expect(await status(env[`${s.toUpperCase()}_PORT`])).toBe(NOT_SERVING);
      expect(await status(env[`${s.toUpperCase()}_PORT`], 'liveness')).toBe(SERVING);
    }
    const draining = await call('GET', '/readyz', undefined, { baseUrl });
    expect(draining.status).toBe(503);
    expect(draining.body.status).toBe('draining');
    // Liveness stays 200; every answer ends its keep-alive connection, so clients move to a replica that stays.
    const alive = await call('GET', '/healthz', undefined, { baseUrl });
    expect(alive.status).toBe(200);
    expect([draining.headers.get('connection'), alive.headers.get('connection')]).toEqual(['close', 'close']);
    expect(child.exitCode).toBeNull();
    expect(await exit).toBe(0);
    expect(log('health-drain')).toContain('"drainMs":3000');
  } finally {
    await stopProcess(child);
  }
}, 90_000);
