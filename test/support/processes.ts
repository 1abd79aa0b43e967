import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { portVariable } from '@svc/lib/config';
import { createRpcClient } from '@svc/lib/rpc-client';
import { Health, HealthCheckResponse_ServingStatus } from '@svc/proto/grpc/health/v1/health_pb';
import { START_ENTRY } from '../../scripts/build-start.js';
import { SERVICES } from '../../services/registry.js';

export const ROOT = path.resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../..');

/**
 * The node flags the container image runs every service with: its `ENV NODE_OPTIONS` (none without one). The
 * benches start the services with them, so they measure the processes as shipped.
 */
export function imageNodeFlags(): string[] {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const options = dockerfile.match(/^ENV NODE_OPTIONS="([^"]*)"$/m);
  return options ? options[1].split(/\s+/).filter(Boolean) : [];
}

/** The lowest port the kernel hands out to outbound connections (Linux's ip_local_port_range), 32768 elsewhere. */
function ephemeralFloor(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 16_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

const handedOut = new Set<number>();

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, () => srv.close(() => resolve(true)));
  });
}

/**
 * A port nothing listens on, for a process started later to bind. It is drawn below the kernel's ephemeral
 * range: a port from `listen(0)` is one the kernel may hand to any outbound connection (a service's pool to
 * PostgreSQL) before the later process binds it, which then fails with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  const floor = ephemeralFloor();
  const lowest = 15_000;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = lowest + Math.floor(Math.random() * (floor - lowest));
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port between ${lowest} and ${floor}`);
}

/** The registered RPC services that have code: what a distributed test platform starts, one process each. */
export const RPC_SERVICES = SERVICES.filter((s) => s.load && !s.edge).map((s) => s.name);

/** `<NAME>_PORT` of every registered RPC service on a free port (code-less ones too, so none collides). */
export async function freeServicePorts(): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const s of SERVICES.filter((x) => !x.edge)) env[portVariable(s)] = String(await freePort());
  return env;
}

/** Used by startPlatform when the caller's env has none ('' leaves it unset): distributed mode requires one. */
export const DEFAULT_SERVICE_TOKEN = 'test-service-token-0123456789abcdef';

/**
 * Starts the platform with the given service names as `npm run start:service` does (tsx), or with none (all in
 * one process) as `npm start` does: the bundle scripts/build-start.ts makes of bin/platform.ts, which the test
 * setup builds first. A caller that talks to a service port itself reads the token it used from
 * `env.SERVICE_TOKEN` (set here when missing).
 */
export function startPlatform(args: string[], env: Record<string, string>, logName: string): ChildProcess {
  env.SERVICE_TOKEN ??= DEFAULT_SERVICE_TOKEN;
  const logDir = path.join(ROOT, '.test-run', 'logs');
  mkdirSync(logDir, { recursive: true });
  const log = createWriteStream(path.join(logDir, `${logName}.log`));
  const entry = args.length
    ? ['--import', 'tsx', path.join(ROOT, 'bin/platform.ts')]
    : ['--enable-source-maps', START_ENTRY];
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  return child;
}

/** Polls until `probe` succeeds; a dead child fails fast with its log's name. */
export async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  child?: ChildProcess,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null)
      throw new Error(`${what}: process exited with ${child.exitCode}; see .test-run/logs`);
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not ready after ${timeoutMs} ms`);
}

export async function httpOk(url: string): Promise<boolean> {
  const res = await fetch(url);
  return res.ok;
}

export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * True once the RPC service on `port` answers its gRPC readiness check (`""`) SERVING: a service opens its port
 * before migrating (health checks only), so an open port does not mean it serves yet.
 */
export async function serviceReady(port: number): Promise<boolean> {
  const health = createRpcClient(Health, `http://127.0.0.1:${port}`, { rpcTimeoutMs: 2000 });
  const { status } = await health.check({ service: '' });
  return status === HealthCheckResponse_ServingStatus.SERVING;
}

export async function stopProcess(child: ChildProcess, timeoutMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}
