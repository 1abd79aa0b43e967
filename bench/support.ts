/**
 * Shared plumbing for the benchmarks: starts the platform in distributed mode (one process per
 * service, as test/platform-setup.ts does) against the machine's PostgreSQL, NATS and Redis under
 * a prefix unique to the run, and removes everything it created afterwards (only the processes it
 * spawned, the databases and JetStream streams named with its prefix).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from 'nats';
import pg from 'pg';
import {
  freePort,
  httpOk,
  imageNodeFlags,
  portOpen,
  serviceReady,
  ROOT,
  stopProcess,
  waitFor,
} from '../test/support/processes.js';

export const PG_SERVER = process.env.BENCH_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
export const NATS_URL = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const LOG_DIR = path.join(os.tmpdir(), 'svc-bench-logs');

/** Lower case, digits and `_` only: valid as a database name and a JetStream stream prefix. */
export function runPrefix(name: string): string {
  return `bench_${name}_${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
}

export interface Platform {
  prefix: string;
  /** The first gateway's address. */
  gatewayUrl: string;
  /** Every gateway replica's address (BENCH_REPLICAS). */
  gatewayUrls: string[];
  env: Record<string, string>;
  children: ChildProcess[];
  /** Each child's name in reports: the service, `#2` for a second replica. */
  labels: Map<ChildProcess, string>;
  /** When each child was spawned (ms since the epoch): where a run sits in its CPU profile. */
  startedAt: Map<ChildProcess, number>;
}

/**
 * BENCH_REPLICAS=2: two gateway processes and two of each service in BENCH_REPLICATED (contacts). Replica
 * i of the gateway calls replica i of those services on its own port (no balancer); the others are shared.
 */
const REPLICAS = Math.max(1, Number(process.env.BENCH_REPLICAS ?? 1));
const REPLICATED = (process.env.BENCH_REPLICATED ?? 'contacts').split(',').filter(Boolean);

/** startPlatform's services run with the container image's NODE_OPTIONS unless the bench is given its own. */
const SERVICE_NODE_OPTIONS = process.env.NODE_OPTIONS ?? imageNodeFlags().join(' ');

/** BENCH_PROFILE=contacts,gateway writes a V8 CPU profile of those services (on exit) under LOG_DIR/prof. */
const PROFILED = new Set((process.env.BENCH_PROFILE ?? '').split(',').filter(Boolean));

/** BENCH_COUNT=1: services count SQL statements, RPCs served, bus messages taken and published (count-calls.ts). */
const COUNTING = process.env.BENCH_COUNT === '1';
const COUNT_DIR = path.join(LOG_DIR, 'counts');
/** BENCH_COUNT_DETAIL=1 (with BENCH_COUNT=1): also each process's counts per unit by kind, most first. */
const COUNT_DETAIL = process.env.BENCH_COUNT_DETAIL === '1';

/** Every process's counts so far (BENCH_COUNT=1), by process label; empty when not counting. */
export async function callCounts(platform: Platform): Promise<Record<string, Record<string, number>>> {
  if (!COUNTING) return {};
  mkdirSync(COUNT_DIR, { recursive: true });
  for (const c of platform.children) c.kill('SIGUSR2');
  await new Promise((r) => setTimeout(r, 500));
  const out: Record<string, Record<string, number>> = {};
  for (const c of platform.children) {
    try {
      out[platform.labels.get(c) ?? String(c.pid)] = JSON.parse(
        readFileSync(path.join(COUNT_DIR, `${c.pid}.json`), 'utf8'),
      );
    } catch {
      // a process that did not answer in time is left out
    }
  }
  return out;
}

/** Per unit of work between two `callCounts`: SQL statements (of which BEGIN), RPCs served and bus messages taken. */
export function callsPerUnit(
  a: Record<string, Record<string, number>>,
  b: Record<string, Record<string, number>>,
  units: number,
): string {
  const per = (n: number) => fmt(n / Math.max(units, 1), 2);
  return Object.entries(b)
    .map(([label, counts]) => {
      const sum = (kind: string) =>
        Object.entries(counts)
          .filter(([k]) => k.startsWith(kind))
          .reduce((n, [k, v]) => n + v - (a[label]?.[k] ?? 0), 0);
      const sql = `${per(sum('sql '))} sql (${per(sum('sql BEGIN'))} BEGIN)`;
      return `${label} ${sql}, ${per(sum('rpc '))} rpc, ${per(sum('msg '))} msg, ${per(sum('pub '))} published`;
    })
    .join('; ')
    .concat(COUNT_DETAIL ? `\n${detailPerUnit(a, b, units)}` : '');
}

/** Each process's counts per unit by kind (SQL statements by their first words), most first. */
function detailPerUnit(
  a: Record<string, Record<string, number>>,
  b: Record<string, Record<string, number>>,
  units: number,
): string {
  return Object.entries(b)
    .map(([label, counts]) => {
      const rows = Object.entries(counts)
        .map(([k, v]) => [k, (v - (a[label]?.[k] ?? 0)) / Math.max(units, 1)] as const)
        .filter(([, n]) => n >= 0.005)
        .sort((x, y) => y[1] - x[1]);
      return rows.map(([k, n]) => `  ${label} ${fmt(n, 3)} ${k}`).join('\n');
    })
    .filter(Boolean)
    .join('\n');
}

function spawnService(service: string, env: Record<string, string>, prefix: string, label = service): ChildProcess {
  mkdirSync(LOG_DIR, { recursive: true });
  const file = label.replace('#', '-');
  const log = createWriteStream(path.join(LOG_DIR, `${prefix}-${file}.log`));
  const profile = PROFILED.has(service)
    ? ['--cpu-prof', `--cpu-prof-dir=${path.join(LOG_DIR, 'prof', `${prefix}-${file}`)}`]
    : [];
  const count = COUNTING ? ['--import', path.join(ROOT, 'bench/count-calls.ts')] : [];
  const args = [...profile, '--import', 'tsx', ...count, path.join(ROOT, 'bin/platform.ts'), service];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: SERVICE_NODE_OPTIONS, ...env, BENCH_COUNT_DIR: COUNT_DIR },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  return child;
}

/** RPC services first (each in its own process), then the gateway once they listen. */
export async function startPlatform(
  prefix: string,
  services: string[] = ['identity', 'contacts'],
  extraEnv: Record<string, string> = {},
): Promise<Platform> {
  const env: Record<string, string> = {
    DATABASE_URL: `${PG_SERVER}/${prefix}`,
    NATS_URL,
    REDIS_URL,
    BUS_PREFIX: prefix,
    SESSION_SECRET: 'bench-session-secret-0123456789',
    SERVICE_TOKEN: 'bench-service-token-0123456789abcdef',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    PORT: String(await freePort()),
    ...extraEnv,
  };
  for (const [k, v] of Object.entries(env)) if (v === '') delete env[k]; // '' in extraEnv unsets a variable
  for (const s of services) env[`${s.toUpperCase()}_PORT`] = String(await freePort());
  env.PUBLIC_URL = `http://127.0.0.1:${env.PORT}`;
  const gatewayUrl = `http://127.0.0.1:${env.PORT}`;
  const platform: Platform = {
    prefix,
    env,
    children: [],
    gatewayUrl,
    gatewayUrls: [],
    labels: new Map(),
    startedAt: new Map(),
  };
  registerCleanup(platform);
  console.log(`services run with NODE_OPTIONS=${SERVICE_NODE_OPTIONS} (the container image's unless given)`);
  const start = (service: string, label: string, replicaEnv: Record<string, string>) => {
    const child = spawnService(service, replicaEnv, prefix, label);
    platform.children.push(child);
    platform.labels.set(child, label);
    platform.startedAt.set(child, Date.now());
    return child;
  };

  // Replica 1 first (it migrates the databases), then the others alike with ports of their own.
  for (let i = 1; i <= REPLICAS; i++) {
    const replicaEnv = { ...env };
    const suffix = i === 1 ? '' : `#${i}`;
    const mine = i === 1 ? services : services.filter((s) => REPLICATED.includes(s));
    for (const s of i === 1 ? [] : mine) replicaEnv[`${s.toUpperCase()}_PORT`] = String(await freePort());
    if (i > 1) replicaEnv.PORT = String(await freePort());
    await Promise.all(
      mine.map((s) => {
        const child = start(s, `${s}${suffix}`, replicaEnv);
        const port = Number(replicaEnv[`${s.toUpperCase()}_PORT`]);
        return waitFor(s, () => (s === 'gateway' ? portOpen(port) : serviceReady(port)), child);
      }),
    );
    const url = `http://127.0.0.1:${replicaEnv.PORT}`;
    await waitFor('gateway', () => httpOk(`${url}/healthz`), start('gateway', `gateway${suffix}`, replicaEnv));
    platform.gatewayUrls.push(url);
  }
  return platform;
}

/** Drops the databases and JetStream streams whose names start with `prefix`. */
export async function dropPrefixed(prefix: string): Promise<void> {
  const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE left(datname, length($1)) = $1',
      [prefix],
    );
    for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
  const nc = await connect({ servers: NATS_URL });
  try {
    const jsm = await nc.jetstreamManager();
    for await (const s of jsm.streams.list()) {
      if (s.config.name.startsWith(`${prefix}_`)) await jsm.streams.delete(s.config.name);
    }
  } finally {
    await nc.drain();
  }
}

const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | undefined;

export function onCleanup(fn: () => Promise<void>): void {
  cleanups.push(fn);
}

/** Runs every cleanup once (last registered first), whatever fails. */
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) {
      await fn().catch((err) => process.stderr.write(`cleanup: ${err instanceof Error ? err.message : String(err)}\n`));
    }
  })();
  return cleaning;
}

function registerCleanup(platform: Platform): void {
  onCleanup(() => dropPrefixed(platform.prefix));
  onCleanup(async () => {
    await Promise.all(platform.children.map((c) => stopProcess(c)));
  });
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: cleaning up\n`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** Runs `main` (when the calling module is the script node was started with), then the cleanups. */
export function run(main: () => Promise<void>, moduleUrl?: string): void {
  if (moduleUrl && process.argv[1] && path.resolve(process.argv[1]) !== fileURLToPath(moduleUrl)) return;
  main()
    .then(() => cleanup())
    .then(() => process.exit(0))
    .catch(async (err) => {
      process.stderr.write(
        `bench failed: ${err instanceof Error ? err.stack : String(err)}\nservice logs: ${LOG_DIR}\n`,
      );
      await cleanup();
      process.exit(1);
    });
}

export interface Tenant {
  projectId: string;
  publicKey: string;
  secretKey: string;
}

/** Signs up a user and creates a project (the bootstrap contract of DESIGN.md). */
export async function newTenant(gatewayUrl: string): Promise<Tenant> {
  const email = `bench-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6)}@example.com`;
  const signup = await fetch(`${gatewayUrl}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'bench-password-123' }),
  });
  if (signup.status !== 201) throw new Error(`signup failed: ${signup.status} ${await signup.text()}`);
  const cookie = signup.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const project = await fetch(`${gatewayUrl}/users/@me/projects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie },
    body: JSON.stringify({ name: 'Bench project' }),
  });
  if (project.status !== 201) throw new Error(`project creation failed: ${project.status} ${await project.text()}`);
  const body = (await project.json()) as { id: string; publicKey: string; secretKey: string };
  return { projectId: body.id, publicKey: body.publicKey, secretKey: body.secretKey };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function machine(): string {
  const mem = (os.totalmem() / 2 ** 30).toFixed(1);
  const cpu = `${os.cpus().length} CPU (${os.cpus()[0]?.model.trim() ?? 'unknown'})`;
  return `${cpu}, ${mem} GiB RAM, Node ${process.version}, ${os.platform()} ${os.release()}`;
}

/** The first line of a bench's report: the machine and its load average (1, 5, 15 minutes). */
export function machineLine(): string {
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  return `machine: ${machine()}; load average ${load}`;
}

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
export function cpuSeconds(pid: number | string | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds of a process's main thread (its thread id is its pid): the JavaScript event loop, without workers. */
export const mainThreadCpuSeconds = (pid: number) => cpuSeconds(`${pid}/task/${pid}`);

/** CPU seconds so far of each thread of a process, by thread id (threads that ended are missing). */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const threads = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) threads.set(tid, cpuSeconds(`${pid}/task/${tid}`));
  } catch {
    // the process is gone
  }
  return threads;
}

/** The PostgreSQL backends serving `pool`'s database now, and their CPU seconds so far (`seconds()`, on each call). */
export async function databaseCpu(pool: pg.Pool): Promise<{ backends: number; seconds: () => number }> {
  const { rows } = await pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database()',
  );
  // The pool closes a backend idle for 10 s: one that ended counts with its last reading (it was idle, not lost CPU).
  const last = new Map<number, number>();
  const seconds = () =>
    rows.reduce((sum, r) => {
      const now = cpuSeconds(r.pid);
      if (!Number.isNaN(now)) last.set(r.pid, now);
      return sum + (last.get(r.pid) ?? 0);
    }, 0);
  return { backends: rows.length, seconds };
}

/** CPU seconds of the PostgreSQL backends serving databases named `<prefix>*` (backends alive now). */
export async function backendCpu(admin: pg.Client, prefix: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number; datname: string }>(
    'SELECT pid, datname FROM pg_stat_activity WHERE left(datname, length($1)) = $1',
    [prefix],
  );
  for (const r of rows) backendDatabase.set(r.pid, r.datname.slice(prefix.length).replace(/^_/, '') || '(run)');
  return new Map(rows.map((r) => [r.pid, cpuSeconds(r.pid)]));
}

/** The database (service) of each backend seen by `backendCpu`, to split PostgreSQL's CPU by service. */
const backendDatabase = new Map<number, string>();

/**
 * The machine's `nats-server` process when NATS runs on this machine (its pid from /proc), else undefined. It is
 * shared: its CPU during a run also counts other sessions' traffic, so reports print it beside the total, not in it.
 */
export function natsServerPid(): number | undefined {
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'nats-server') return Number(entry);
      } catch {
        // gone meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return undefined;
}
const NATS_SERVER_PID = natsServerPid();

/** CPU seconds used so far by each service process, the run's PostgreSQL backends, this process and nats-server. */
export interface CpuSnapshot {
  services: Record<string, number>;
  pg: Map<number, number>;
  bench: NodeJS.CpuUsage;
  nats: number;
}

export async function cpuSnapshot(platform: Platform, admin: pg.Client): Promise<CpuSnapshot> {
  return {
    services: cpuByService(platform),
    pg: await backendCpu(admin, platform.prefix),
    bench: process.cpuUsage(),
    nats: cpuSeconds(NATS_SERVER_PID),
  };
}

/**
 * CPU used between two snapshots, per process and in total, as milliseconds per unit of work
 * ("ms per execution"): on a shared machine a steadier figure than the rate.
 */
export function cpuPerUnit(a: CpuSnapshot, b: CpuSnapshot, units: number, unit: string): string {
  const parts: [string, number][] = Object.entries(b.services).map(([s, v]) => [s, v - (a.services[s] ?? 0)]);
  let pgCpu = 0;
  const byDatabase = new Map<string, number>();
  for (const [pid, s] of b.pg) {
    if (!Number.isFinite(s)) continue;
    const used = s - (a.pg.get(pid) ?? 0);
    pgCpu += used;
    const db = backendDatabase.get(pid) ?? '?';
    byDatabase.set(db, (byDatabase.get(db) ?? 0) + used);
  }
  parts.push(['PostgreSQL', pgCpu]);
  parts.push(['bench', (b.bench.user - a.bench.user + b.bench.system - a.bench.system) / 1e6]);
  const total = parts.reduce((sum, [, v]) => sum + v, 0);
  const ms = (s: number) => fmt((1000 * s) / Math.max(units, 1), 2);
  const ms3 = (s: number) => fmt((1000 * s) / Math.max(units, 1), 3);
  return (
    `CPU per ${unit}: total ${ms(total)} ms (${parts.map(([k, v]) => `${k} ${ms(v)}`).join(', ')}); ` +
    `CPU seconds: ${parts.map(([k, v]) => `${k} ${fmt(v, 1)}`).join(', ')}; ` +
    // Three decimals: a database's share is a few hundredths of a millisecond per unit.
    `PostgreSQL by database: ${[...byDatabase].map(([k, v]) => `${k} ${ms3(v)}`).join(', ')} ms; ` +
    // Not in the total: the machine's NATS server also carries other runs' messages.
    `nats-server (shared, not in the total) ${Number.isFinite(b.nats - a.nats) ? ms(b.nats - a.nats) : '?'} ms`
  );
}

/** CPU seconds per started service, to tell which process saturates during a run. */
export function cpuByService(platform: Platform): Record<string, number> {
  return Object.fromEntries(platform.children.map((c) => [platform.labels.get(c), cpuSeconds(c.pid)]));
}

/** Peak resident set size of a process in MiB (`VmHWM` in /proc/<pid>/status, Linux); NaN elsewhere. */
export function peakRssMiB(pid: number | undefined): number {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m);
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/**
 * "Peak RSS (MiB): gateway 120, contacts 140, postgres x29 up to 22, bench 150": each named process, the
 * processes below them grouped by command (embedded PostgreSQL's backends, esbuild), and this bench process.
 * Read it before stopping them: a process that ended has no figure.
 */
export function peakRssReport(processes: Record<string, number | undefined>): string {
  const parts = Object.entries(processes).map(([name, pid]) => `${name} ${fmt(peakRssMiB(pid))}`);
  const below = new Map<string, number[]>();
  for (const pid of Object.values(processes)) {
    if (pid === undefined) continue;
    for (const d of descendants(pid)) below.set(d.comm, [...(below.get(d.comm) ?? []), peakRssMiB(d.pid)]);
  }
  for (const [comm, peaks] of below) {
    parts.push(
      peaks.length === 1 ? `${comm} ${fmt(peaks[0])}` : `${comm} x${peaks.length} up to ${fmt(Math.max(...peaks))}`,
    );
  }
  parts.push(`bench ${fmt(peakRssMiB(process.pid))}`);
  return `peak RSS (MiB): ${parts.join(', ')}`;
}

/** peakRssReport of a distributed platform's processes, each named by the service it runs. */
export function platformPeakRss(platform: Platform): string {
  return peakRssReport(Object.fromEntries(platform.children.map((c) => [c.spawnargs.at(-1), c.pid])));
}

/** The pids below `pid` (children, grandchildren, ...) with their command names, from /proc (Linux). */
export function descendants(pid: number): { pid: number; comm: string }[] {
  const parent = new Map<number, { ppid: number; comm: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(entry), { ppid, comm });
    } catch {
      // the process ended while we looked
    }
  }
  const out: { pid: number; comm: string }[] = [];
  const walk = (p: number) => {
    for (const [child, info] of parent) {
      if (info.ppid === p) {
        out.push({ pid: child, comm: info.comm });
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

/**
 * CPU seconds of a process and of its descendants grouped by command name (`node`, `postgres`, ...).
 * Descendants that ended before the call are not counted (their time goes to the parent's cutime).
 */
export function treeCpu(pid: number): Record<string, number> {
  const out: Record<string, number> = { self: cpuSeconds(pid) };
  for (const d of descendants(pid)) {
    const s = cpuSeconds(d.pid);
    if (Number.isFinite(s)) out[d.comm] = (out[d.comm] ?? 0) + s;
  }
  return out;
}

/** `a - b` per key (keys of `a`), for CPU used during a phase. */
export function cpuDelta(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v - (b[k] ?? 0)]));
}

/** "self 1.2 s (60%), postgres 0.8 s (40%)" over `seconds` of wall time (100% is one core). */
export function formatCpu(cpu: Record<string, number>, seconds: number): string {
  return Object.entries(cpu)
    .filter(([, v]) => v > 0.05)
    .sort(([, a], [, b]) => b - a)
    .map(([k, v]) => `${k} ${fmt(v, 1)} s (${fmt((100 * v) / seconds)}%)`)
    .join(', ');
}

/** `bench/send.ts`'s personalised `/v1/send` body for request `i`, from `news@<domain>`. */
export function sendBody(i: number, domain: string): string {
  return JSON.stringify({
    to: { name: `Reader ${i}`, email: `reader${i}@bench.example` },
    from: { name: 'Bench', email: `news@${domain}` },
    subject: 'Hello {{firstName}}, issue {{issue}}',
    body:
      '<h1>Hi {{firstName}}</h1><p>Your plan: {{plan ?? "free"}}. ' +
      '<a href="https://example.com/read?i={{issue}}">Read</a></p>',
    data: { firstName: `Reader${i}`, issue: i, plan: i % 2 ? 'pro' : null },
  });
}

export interface ClientsResult {
  ok: number;
  failed: number;
  /** "HTTP 503: 2, fetch error: ...: 1" */
  failures: string;
  seconds: number;
  p50: string;
  p99: string;
}

/**
 * POSTs JSON texts to `url` over at most `connections` kept-alive sockets (node:http: about half the client CPU
 * of fetch per request). `post` resolves with the status, rejects on a connection error.
 */
export function httpPoster(url: string, connections: number, headers: Record<string, string> = {}) {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const post = (payload: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        target,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers },
        },
        (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
          res.once('error', reject);
        },
      );
      req.once('error', reject);
      req.end(payload);
    });
  return { post, close: () => agent.destroy() };
}

/**
 * `connections` clients POSTing `body(i)` for i < `requests` to `url`, each sending its next request as soon
 * as the previous is answered. Counts 2xx answers, failures by status (or fetch error) and latencies.
 */
export async function runClients(
  url: string,
  headers: Record<string, string>,
  body: (i: number) => string,
  requests: number,
  connections: number,
): Promise<ClientsResult> {
  let next = 0;
  let ok = 0;
  let failed = 0;
  const failures = new Map<string, number>();
  const fail = (why: string) => {
    failed++;
    failures.set(why, (failures.get(why) ?? 0) + 1);
  };
  const latencies: number[] = [];
  const { post, close } = httpPoster(url, connections, headers);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      for (let i = next++; i < requests; i = next++) {
        const t0 = performance.now();
        const status = await post(body(i)).catch((err: Error) => {
          fail(`request error: ${err.message}`);
          return 0;
        });
        latencies.push(performance.now() - t0);
        if (status >= 200 && status < 300) ok++;
        else if (status) fail(`HTTP ${status}`);
      }
    }),
  );
  close();
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
  const failureText = [...failures].map(([k, n]) => `${k}: ${n}`).join(', ');
  return { ok, failed, failures: failureText, seconds, p50: pct(50), p99: pct(99) };
}
