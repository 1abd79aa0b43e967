import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createRpcClient } from '@svc/lib/rpc-client';
import { Health, HealthCheckResponse_ServingStatus } from '@svc/proto/grpc/health/v1/health_pb';
import { call, expectEnvelope, sessionCookie, type Answer, uniqueEmail } from './support/client.js';
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
 * PostgreSQL faults against a PostgreSQL and a platform of our own (every service in one
 * process, in-process bus, no Redis): while the database is stopped or frozen every request
 * ends quickly in 503 SERVICE_UNAVAILABLE with Retry-After, the process stays up, /readyz says
 * which dependency is down, and everything recovers by itself when the database is back. Also:
 * a service that dies mid-call or refuses connections is a 503 as well, never a 500.
 */
const LOG = 'faults-postgres';
const pg = await PrivatePostgres.create();
let child: ChildProcess;
let baseUrl: string;
let cookie: string;
let secretKey: string;
let publicKey: string;
let env: Record<string, string>;

const track = () =>
  call('POST', '/v1/track', { email: uniqueEmail('pgfault'), event: 'ping' }, { key: publicKey, baseUrl });
const listContacts = () => call('GET', '/contacts?limit=1', undefined, { key: secretKey, baseUrl });
const projects = () => call('GET', '/users/@me/projects', undefined, { cookie, baseUrl });
const readyz = () => call('GET', '/readyz', undefined, { baseUrl });
/** contacts' gRPC health check `name` ('' is its readiness), asked directly on its port. */
const contactsHealth = async (name = '') =>
  (
    await createRpcClient(Health, `http://127.0.0.1:${env.CONTACTS_PORT}`, { rpcTimeoutMs: 3000 }).check({
      service: name,
    })
  ).status;
const { SERVING, NOT_SERVING } = HealthCheckResponse_ServingStatus;

async function timed(request: () => Promise<Answer>): Promise<Answer & { ms: number }> {
  const started = Date.now();
  const res = await request();
  return { ...res, ms: Date.now() - started };
}

function expectUnavailable(res: Answer & { ms: number }, maxMs: number): void {
  expectEnvelope(res, 503, 'SERVICE_UNAVAILABLE');
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  // No internal address (host:port) in what the client sees.
  expect(res.body.error.message).not.toMatch(/\d+\.\d+\.\d+\.\d+|:\d{2,5}\b|ECONN/);
  expect(res.ms).toBeLessThan(maxMs);
}

async function expectRecovered(): Promise<void> {
  await waitFor(
    'recovery',
    async () => {
      const answers = await Promise.all([track(), listContacts(), projects(), readyz()]);
      return answers.every((a) => a.status === 200);
    },
    child,
    20_000,
  );
}

beforeAll(async () => {
  pg.start();
  const port = await freePort();
  env = {
    DATABASE_URL: pg.url,
    NATS_URL: '',
    REDIS_URL: '',
    SMTP_URL: '',
    PORT: String(port),
    PUBLIC_URL: `http://localhost:${port}`,
    EMBEDDED_SMTP_PORT: String(await freePort()),
    SESSION_SECRET: 'pg-fault-test-session-secret',
    SERVICE_TOKEN: 'pg-fault-test-service-token-0123456789',
    // The warmed key stays cached while the database is down: /v1/track reaches the contacts write path.
    KEY_CACHE_TTL_SECONDS: '600',
    DB_CONNECT_TIMEOUT_MS: '1500',
    DB_QUERY_TIMEOUT_MS: '2000',
    DB_STATEMENT_TIMEOUT_MS: '2000',
    DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: '3000',
  };
  Object.assign(env, await freeServicePorts());
  baseUrl = `http://127.0.0.1:${port}`;
  child = startPlatform([], env, LOG);
  await waitFor('platform', () => httpOk(`${baseUrl}/healthz`), child, 30_000);

  const owner = { email: uniqueEmail('owner'), password: 'password-123' };
  const signup = await call('POST', '/auth/signup', owner, { baseUrl });
  expect(signup.status).toBe(201);
  cookie = sessionCookie(signup.headers);
  const project = await call('POST', '/users/@me/projects', { name: 'PostgreSQL faults' }, { cookie, baseUrl });
  expect(project.status).toBe(201);
  ({ secretKey, publicKey } = project.body);
  expect((await track()).status).toBe(200); // warms the key cache
}, 40_000);

afterAll(async () => {
  try {
    if (child) await stopProcess(child, 5000);
  } finally {
    pg.destroy();
  }
});

test('PostgreSQL stopped: 503 with Retry-After at once, the process stays up, recovers when it is back', async () => {
  // Every registered service with code runs in this process, and the gateway asks each one.
  const checks = { ...Object.fromEntries(RPC_SERVICES.map((name) => [name, 'ok'])), bus: 'ok' };
  const services = Object.fromEntries(RPC_SERVICES.map((name) => [name, { database: 'ok', migrations: 'ok' }]));
  expect((await readyz()).body).toEqual({ status: 'ok', checks, services });
  expect(await contactsHealth()).toBe(SERVING);
  pg.stopImmediately();
  try {
    for (let i = 0; i < 3; i++) {
      expectUnavailable(await timed(track), 3000);
      expectUnavailable(await timed(listContacts), 3000);
      expectUnavailable(await timed(projects), 3000);
    }
    const ready = await readyz();
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toMatchObject({ identity: 'down', contacts: 'down', messaging: 'down' });
    expect(ready.body.services.contacts).toEqual({ database: 'down', migrations: 'down' });
    // The service's own gRPC health: not ready, database down, but alive (liveness must not restart it).
    expect(await contactsHealth()).toBe(NOT_SERVING);
    expect(await contactsHealth('database')).toBe(NOT_SERVING);
    expect(await contactsHealth('liveness')).toBe(SERVING);
    expect(child.exitCode).toBeNull();
  } finally {
    pg.start();
  }
  await expectRecovered();
  await waitFor('contacts SERVING again', async () => (await contactsHealth()) === SERVING, child, 10_000);

  const readLog = () => readFileSync(path.join(ROOT, '.test-run', 'logs', `${LOG}.log`), 'utf8');
  const changes = (log: string) => log.split('\n').filter((l) => l.includes('"dependency":"postgres"'));
  // The child's log reaches the file through a pipe: on a loaded machine the "up" line may lag the recovery.
  await waitFor(
    'a database "up" line',
    async () => changes(readLog()).some((l) => l.includes('"state":"up"')),
    child,
    10_000,
  );
  const log = readLog();
  // One line per change of each service's database (down, then up), not one per failed request.
  expect(changes(log).filter((l) => l.includes('"state":"down"')).length).toBeLessThanOrEqual(RPC_SERVICES.length);
  expect(log).not.toContain('"msg":"rpc failed"');
  expect(log).not.toContain('Unhandled');
});

test('PostgreSQL frozen (SIGSTOP): 503 within the configured timeouts, /readyz is 503, SIGCONT recovers', async () => {
  pg.freeze();
  try {
    expectUnavailable(await timed(listContacts), 6000);
    expectUnavailable(await timed(track), 6000);
    const ready = await timed(readyz);
    expect(ready.status).toBe(503);
    expect(ready.ms).toBeLessThan(3000);
    expect(child.exitCode).toBeNull();
  } finally {
    pg.thaw();
  }
  await expectRecovered();
});

test('a service that dies mid-call or refuses connections: 503 with Retry-After, never a 500', async () => {
  // A second gateway whose contacts "service" resets every connection after the call's first
  // bytes (a process killed mid-call) and whose messaging service is not listening at all.
  const crashing = net.createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
  await new Promise<void>((resolve) => crashing.listen(0, '127.0.0.1', resolve));
  const closedPort = await freePort();
  const port = await freePort();
  const gateway = startPlatform(
    ['gateway'],
    {
      ...env,
      PORT: String(port),
      IDENTITY_URL: `http://127.0.0.1:${env.IDENTITY_PORT}`,
      CONTACTS_URL: `http://127.0.0.1:${(crashing.address() as net.AddressInfo).port}`,
      MESSAGING_URL: `http://127.0.0.1:${closedPort}`,
    },
    `${LOG}-gateway`,
  );
  try {
    const url = `http://127.0.0.1:${port}`;
    await waitFor('second gateway', () => httpOk(`${url}/healthz`), gateway, 20_000);
    expectUnavailable(await timed(() => call('GET', '/contacts', undefined, { key: secretKey, baseUrl: url })), 3000);
    expectUnavailable(await timed(() => call('GET', '/templates', undefined, { key: secretKey, baseUrl: url })), 3000);
    const ready = await call('GET', '/readyz', undefined, { baseUrl: url });
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toMatchObject({ identity: 'ok', contacts: 'down', messaging: 'down' });
  } finally {
    await stopProcess(gateway, 5000);
    crashing.close();
  }
});

test('a platform started while PostgreSQL is down waits for it instead of exiting, then serves', async () => {
  await stopProcess(child);
  pg.stopImmediately();
  child = startPlatform([], env, `${LOG}-late`);
  try {
    const log = path.join(ROOT, '.test-run', 'logs', `${LOG}-late.log`);
    const waiting = async () => readFileSync(log, 'utf8').includes('database unreachable at start');
    await waitFor('the wait for the database', waiting, child, 20_000);
    expect(child.exitCode).toBeNull();
  } finally {
    pg.start();
  }
  await waitFor('platform after the database came up', () => httpOk(`${baseUrl}/readyz`), child, 40_000);
  await expectRecovered();
});
