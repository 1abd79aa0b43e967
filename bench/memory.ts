/**
 * Benchmark (not a test): memory of embedded `npm start` (every service in one Node process, embedded
 * PostgreSQL, in-process bus). For each way of running the platform in BENCH_MODES it starts it on a fresh
 * data folder, waits BENCH_IDLE_S seconds idle and reads the Node process's RSS; then it does what a newcomer
 * does first (GET /healthz, the console at /app with its script, sign up, a project, one mail from the sandbox
 * sender, the mail viewer), waits idle again and reads it again. It prints, per sample, the RSS of the Node
 * process and, separately, of embedded PostgreSQL (the postmaster's RSS and the PSS of all its processes: their
 * shared buffers counted once), then the peak RSS of every process. Aim (issue 12): the Node process idle
 * under 120 MB.
 *
 *   node --import tsx bench/memory.ts   # BENCH_MODES=bundle,tsx BENCH_IDLE_S=30 BENCH_IDLE_AFTER_S=65
 *
 * Modes: `bundle` is what `npm start` runs (scripts/build-start.ts, then `node --enable-source-maps
 * --max-semi-space-size=2 .build/platform.js`); `tsx` is bin/platform.ts transpiled at run time (`node --import
 * tsx`, what `npm start` ran before). BENCH_NODE_ARGS adds options to the platform's node, after the mode's
 * (`--max-semi-space-size=16` overrides the bundle's 2). BENCH_LOG_FORMAT (pretty: a terminal's) and
 * BENCH_LOG_LEVEL (info) set LOG_FORMAT and LOG_LEVEL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildStart, START_ENTRY } from '../scripts/build-start.js';
import { freePort, httpOk, ROOT, stopProcess, waitFor } from '../test/support/processes.js';
import { descendants, fmt, LOG_DIR, onCleanup, peakRssReport, run } from './support.js';

const MODES = (process.env.BENCH_MODES ?? 'bundle,tsx').split(',').filter(Boolean);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 30);
// The DKIM signing threads the mail started end after 60 s without work (SigningPool's idleMs).
const IDLE_AFTER_S = Number(process.env.BENCH_IDLE_AFTER_S ?? 65);
const NODE_ARGS = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];

// Node's options and the entry: as package.json's `start` script runs it (after scripts/build-start.ts), and as
// `npm start` ran before (tsx).
const MODE_ARGS: Record<string, { options: string[]; entry: string; env?: Record<string, string> }> = {
  bundle: {
    options: ['--enable-source-maps', '--max-semi-space-size=2'],
    entry: START_ENTRY,
    // BENCH_MALLOC_ARENA_MAX= (empty) measures without it.
    env: { MALLOC_ARENA_MAX: process.env.BENCH_MALLOC_ARENA_MAX ?? '2' },
  },
  tsx: { options: ['--import', 'tsx'], entry: path.join(ROOT, 'bin/platform.ts') },
};

/** A field of /proc/<pid>/status or smaps_rollup in MiB (Linux); NaN when the process is gone. */
function procMiB(pid: number, file: 'status' | 'smaps_rollup', field: string): number {
  try {
    const m = readFileSync(`/proc/${pid}/${file}`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

interface Sample {
  node: number;
  postmaster: number;
  postgresPss: number;
  postgresProcesses: number;
}

function sample(child: ChildProcess): Sample {
  const pgPids = descendants(child.pid!)
    .filter((d) => d.comm === 'postgres')
    .map((d) => d.pid);
  return {
    node: procMiB(child.pid!, 'status', 'VmRSS'),
    postmaster: pgPids.length ? procMiB(pgPids[0], 'status', 'VmRSS') : Number.NaN,
    postgresPss: pgPids.reduce((sum, pid) => sum + (procMiB(pid, 'smaps_rollup', 'Pss') || 0), 0),
    postgresProcesses: pgPids.length,
  };
}

const show = (s: Sample) =>
  `node ${fmt(s.node)} MiB RSS; PostgreSQL: postmaster ${fmt(s.postmaster)} MiB RSS, ` +
  `${s.postgresProcesses} processes ${fmt(s.postgresPss)} MiB PSS`;

async function json(base: string, method: string, route: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await res.json().catch(() => ({}))) as Record<string, any>;
  if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(answer)}`);
  return { headers: res.headers, body: answer };
}

/** What a newcomer does first: the console, an account, a project, one mail from the sandbox sender, the viewer. */
async function firstSteps(base: string): Promise<void> {
  for (const route of ['/healthz', '/', '/app', '/app/assets/app.js', '/app/assets/style.css', '/openapi.json']) {
    const res = await fetch(`${base}${route}`);
    if (!res.ok) throw new Error(`GET ${route}: ${res.status}`);
    await res.arrayBuffer();
  }
  const signup = await json(base, 'POST', '/auth/signup', { email: 'me@example.com', password: 'a-long-password' });
  const cookie = signup.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const project = await json(base, 'POST', '/users/@me/projects', { name: 'My app' }, { cookie });
  const auth = { authorization: `Bearer ${project.body.secretKey}` };
  const mail = { to: 'friend@example.com', from: 'sandbox@sandbox.localhost', subject: 'Hi', body: '<p>Hello</p>' };
  await json(base, 'POST', '/v1/send', mail, auth);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const inbox = await json(base, 'GET', '/dev/mail.json', undefined, { cookie });
    if (JSON.stringify(inbox.body).includes('friend@example.com')) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the mail did not reach the mail viewer in 30 s');
}

async function measure(mode: string): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-memory-'));
  onCleanup(async () => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const env: Record<string, string> = {
    DATABASE_URL: '',
    NATS_URL: '',
    REDIS_URL: '',
    SMTP_URL: '',
    DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_PG_PORT: String(await freePort()),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    // What `npm start` in a terminal logs with (stdout a TTY); `json` when its output goes to a pipe or a file.
    LOG_FORMAT: process.env.BENCH_LOG_FORMAT ?? 'pretty',
  };
  for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS'])
    env[`${s}_PORT`] = String(await freePort());
  mkdirSync(LOG_DIR, { recursive: true });
  const log = createWriteStream(path.join(LOG_DIR, `memory-${mode}-${Date.now().toString(36)}.log`));
  const started = performance.now();
  const { options, entry, env: modeEnv } = MODE_ARGS[mode];
  const child = spawn(process.execPath, [...options, ...NODE_ARGS, entry], {
    cwd: ROOT,
    env: { ...process.env, ...env, ...modeEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  onCleanup(() => stopProcess(child));
  const base = `http://127.0.0.1:${port}`;
  await waitFor('platform', () => httpOk(`${base}/healthz`), child, 120_000);
  const readyS = (performance.now() - started) / 1000;
  await new Promise((r) => setTimeout(r, IDLE_S * 1000));
  const idle = sample(child);
  await firstSteps(base);
  const busy = sample(child);
  await new Promise((r) => setTimeout(r, IDLE_AFTER_S * 1000));
  const after = sample(child);
  const peaks = peakRssReport({ node: child.pid });
  await stopProcess(child);
  const load = os.loadavg().map((l) => l.toFixed(1));
  process.stdout.write(
    `\n${mode}${NODE_ARGS.length ? ` (${NODE_ARGS.join(' ')})` : ''}: /healthz after ${fmt(readyS, 1)} s\n` +
      `  idle ${IDLE_S} s after start:  ${show(idle)}\n` +
      `  after the first steps:     ${show(busy)}\n` +
      `  idle ${IDLE_AFTER_S} s after them:   ${show(after)}\n` +
      `  ${peaks}\n` +
      `  load average ${load.join(' ')}\n`,
  );
}

async function main(): Promise<void> {
  if (MODES.includes('bundle')) await buildStart();
  process.stdout.write(`memory of embedded npm start; load average ${os.loadavg()[0].toFixed(1)}\n`);
  for (const mode of MODES) {
    if (!MODE_ARGS[mode]) throw new Error(`unknown mode ${mode}; known: ${Object.keys(MODE_ARGS).join(', ')}`);
    await measure(mode);
  }
}

run(main, import.meta.url);
