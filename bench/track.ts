/**
 * POST /v1/track through the gateway (distributed mode: identity, contacts and gateway each in
 * their own process) under autocannon at fixed concurrency, then the same load against an empty
 * Express JSON handler, and the ratio of the two (the box is noisy: the ratio holds, absolute
 * figures do not).
 *
 *   node --import tsx bench/track.ts
 *   BENCH_CONNECTIONS=50 BENCH_DURATION=12 BENCH_EMAILS=10000 node --import tsx bench/track.ts
 *
 * Besides the two headline runs it measures two cut-down paths with the same load, so the reader
 * sees where the time goes (BENCH_BREAKDOWN=0 skips them):
 *   - "gateway only": `event` is a number, so the gateway answers 422 after key auth, rate limit
 *     and idempotency but before any RPC;
 *   - "gateway+RPC": the email is invalid, so contacts answers 422 before any SQL.
 *
 * The empty handler runs in a worker thread of this process (its own event loop, so autocannon's
 * client work on the main thread does not slow it down; BENCH_EMPTY_MAIN_THREAD=1 puts it on the
 * main thread instead).
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import autocannon from 'autocannon';
import express from 'express';
import pg from 'pg';
import {
  backendCpu,
  callCounts,
  callsPerUnit,
  cpuByService,
  cpuSeconds,
  fmt,
  machineLine,
  newTenant,
  onCleanup,
  peakRssMiB,
  PG_SERVER,
  run,
  runPrefix,
  startPlatform,
  type Platform,
} from './support.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 12);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const EMAILS = Number(process.env.BENCH_EMAILS ?? 10_000);
const SERVICES = (process.env.BENCH_SERVICES ?? 'identity,contacts').split(',');

const EMPTY_SERVER = `
const { parentPort } = require('node:worker_threads');
const express = require('express');
const app = express();
app.use(express.json());
app.post('/v1/track', (req, res) => { res.json({ ok: true }); });
const server = app.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', (m) => { if (m === 'stop') server.close(() => process.exit(0)); });
`;

async function startEmptyHandler(): Promise<{ url: string; stop(): Promise<void> }> {
  if (process.env.BENCH_EMPTY_MAIN_THREAD === '1') {
    const app = express();
    app.use(express.json());
    app.post('/v1/track', (_req, res) => {
      res.json({ ok: true });
    });
    const server = await new Promise<http.Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      stop: () => new Promise((r) => server.close(() => r())),
    };
  }
  const worker = new Worker(EMPTY_SERVER, { eval: true });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      const exited = new Promise((r) => worker.once('exit', r));
      worker.postMessage('stop');
      await exited;
    },
  };
}

type Body = 'valid' | 'gateway-rejects' | 'contacts-rejects';

/** One autocannon run; every request carries a different email (EMAILS distinct ones, cycling). */
async function load(
  url: string | string[],
  publicKey: string,
  duration: number,
  body: Body = 'valid',
): Promise<autocannon.Result> {
  let n = 0;
  return autocannon({
    url,
    connections: CONNECTIONS,
    duration,
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: '/v1/track',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${publicKey}` },
        setupRequest: (req) => {
          const i = n++;
          req.body = JSON.stringify({
            email: body === 'contacts-rejects' ? `not-an-email-${i % EMAILS}` : `user-${i % EMAILS}@bench.example.com`,
            event: body === 'gateway-rejects' ? 42 : 'page.viewed',
            data: { plan: ['free', 'pro', 'team'][i % 3], visits: i, page: { path: `/p/${i % 50}` } },
          });
          return req;
        },
      },
    ],
  });
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
}

/** Prints one run; `answered` counts every answer (the cut-down paths answer 422 by design). */
function summary(name: string, r: autocannon.Result, expected: 200 | 422 = 200, empty?: Figures): Figures {
  const codes = r.statusCodeStats ?? {};
  const ok = codes[String(expected)]?.count ?? 0;
  const rps = ok / r.duration;
  const other = r['2xx'] + r.non2xx - ok + r.errors + r.timeouts;
  const statuses = Object.entries(codes)
    .map(([code, s]) => `${code}:${s.count}`)
    .join(' ');
  const ratio = empty ? `  (${(rps / empty.rps).toFixed(2)}x empty)` : '';
  console.log(
    `${name.padEnd(30)} ${fmt(rps).padStart(7)} req/s   ` +
      `p50 ${fmt(r.latency.p50, 1).padStart(6)} ms   p99 ${fmt(r.latency.p99, 1).padStart(7)} ms` +
      `   [${statuses}${other ? `; unexpected/errors ${other}` : ''}]${ratio}`,
  );
  return { rps, p50: r.latency.p50, p99: r.latency.p99 };
}

/** Each service's share of a core during a run, and CPU ms per answer (the figure the box's load moves least). */
function cpuReport(
  platform: Platform,
  before: Record<string, number>,
  selfBefore: number,
  r: autocannon.Result,
): string {
  const after = cpuByService(platform);
  const seconds = r.duration;
  const answers = r['2xx'] + r.non2xx;
  const parts = Object.entries(after).map(
    ([s, v]) =>
      `${s} ${(((v - before[s]) / seconds) * 100).toFixed(0)}% (${fmt(((v - before[s]) * 1000) / answers, 2)} ms/req)`,
  );
  parts.push(`bench process (autocannon) ${(((cpuSeconds(process.pid) - selfBefore) / seconds) * 100).toFixed(0)}%`);
  return parts.join(', ');
}

/** Where the run sits in each process's profile: `bench/profile-top.ts <dir> 15 <from> <to>` reads that window. */
function profileWindow(platform: Platform, from: Date): string {
  return platform.children
    .map((c) => {
      const at = (t: number) => ((t - platform.startedAt.get(c)!) / 1000).toFixed(1);
      return `${platform.labels.get(c)} ${at(from.getTime())}-${at(Date.now())} s`;
    })
    .join(', ');
}

run(
  async () => {
    console.log(machineLine());
    console.log(
      `load: ${CONNECTIONS} connections, ${DURATION} s per run (+${WARMUP} s warm-up), ` +
        `${fmt(EMAILS)} distinct emails cycling`,
    );
    const prefix = runPrefix('track');
    const t0 = Date.now();
    const platform = await startPlatform(prefix, SERVICES);
    console.log(
      `platform (${platform.children.map((c) => platform.labels.get(c)).join(', ')}; one process each) ` +
        `ready in ${((Date.now() - t0) / 1000).toFixed(1)} s, prefix ${prefix}`,
    );
    const tenant = await newTenant(platform.gatewayUrl);

    // One request by hand, so a broken endpoint fails loudly instead of benchmarking 4xx answers.
    const probe = await fetch(`${platform.gatewayUrl}/v1/track`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.publicKey}` },
      body: JSON.stringify({ email: 'probe@bench.example.com', event: 'page.viewed', data: { plan: 'free' } }),
    });
    const probeBody = (await probe.json()) as { success?: boolean };
    if (probe.status !== 200 || probeBody.success !== true)
      throw new Error(`/v1/track probe: ${probe.status} ${JSON.stringify(probeBody)}`);

    const empty = await startEmptyHandler();
    onCleanup(() => empty.stop());

    if (WARMUP > 0) {
      await load(platform.gatewayUrls, tenant.publicKey, WARMUP);
      await load(empty.url, tenant.publicKey, WARMUP);
    }
    console.log('');
    const e = summary('empty Express JSON handler', await load(empty.url, tenant.publicKey, DURATION));

    const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
    await admin.connect();
    onCleanup(() => admin.end());
    const countsBefore = await callCounts(platform);
    const cpuBefore = cpuByService(platform);
    const selfBefore = cpuSeconds(process.pid);
    const pgBefore = await backendCpu(admin, prefix);
    const startedAt = new Date();
    const r = await load(platform.gatewayUrls, tenant.publicKey, DURATION);
    const pgAfter = await backendCpu(admin, prefix);
    const t = summary('POST /v1/track', r, 200, e);
    if (process.env.BENCH_PROFILE) console.log(`  in the CPU profiles: ${profileWindow(platform, startedAt)}`);
    console.log(
      `  CPU during that run (100% = one core of ${os.cpus().length}): ` +
        cpuReport(platform, cpuBefore, selfBefore, r),
    );
    // The run's own backends (the platform's pools); NATS and Redis are the machine's shared servers, left out.
    let pgCpu = 0;
    for (const [pid, s] of pgAfter) if (Number.isFinite(s)) pgCpu += s - (pgBefore.get(pid) ?? 0);
    const answers = r['2xx'] + r.non2xx;
    console.log(
      `  PostgreSQL backends of the run ${((pgCpu / r.duration) * 100).toFixed(0)}% ` +
        `(${fmt((pgCpu * 1000) / answers, 2)} ms/req)`,
    );
    const counts = await callCounts(platform);
    if (Object.keys(counts).length) console.log(`  per request: ${callsPerUnit(countsBefore, counts, answers)}`);

    // Events written by one group commit share its transaction's now(): distinct created_at = commits.
    const db = new pg.Client({ connectionString: `${PG_SERVER}/${prefix}_contacts` });
    await db.connect();
    const { rows } = await db.query<{ events: number; txs: number }>(
      'SELECT count(*)::int AS events, count(DISTINCT created_at)::int AS txs FROM events WHERE created_at >= $1',
      [startedAt],
    );
    await db.end();
    console.log(
      `  group commit: ${fmt(rows[0].events)} events in ${fmt(rows[0].txs)} transactions ` +
        `(${(rows[0].events / rows[0].txs).toFixed(1)} events per commit)`,
    );

    if (process.env.BENCH_BREAKDOWN !== '0') {
      console.log('\nwhere the time goes (same load, cut-down paths; both answer 422 by design):');
      for (const [label, body] of [
        ['gateway only (422 before RPC)', 'gateway-rejects'],
        ['gateway+RPC (422 before SQL)', 'contacts-rejects'],
      ] as const) {
        const before = cpuByService(platform);
        const self = cpuSeconds(process.pid);
        const rr = await load(platform.gatewayUrls, tenant.publicKey, DURATION, body);
        summary(label, rr, 422, e);
        console.log(`  CPU during that run: ${cpuReport(platform, before, self, rr)}`);
      }
    }

    const rss = platform.children.map((c) => `${platform.labels.get(c)} ${fmt(peakRssMiB(c.pid))} MiB`);
    console.log(`\npeak RSS: ${rss.join(', ')}, bench process ${fmt(peakRssMiB(process.pid))} MiB`);
    const met = t.rps / e.rps >= 0.3 && t.p99 < 50;
    console.log(
      `RESULT /v1/track ${fmt(t.rps)} events/s, p50 ${fmt(t.p50, 1)} ms, p99 ${fmt(t.p99, 1)} ms; ` +
        `empty handler ${fmt(e.rps)} req/s; ratio track/empty ${(t.rps / e.rps).toFixed(2)} ` +
        `(aim >= 0.30 with p99 < 50 ms: ${met ? 'met' : 'NOT met'})`,
    );
  },
  import.meta.url,
);
