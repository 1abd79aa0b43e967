/**
 * Benchmark (not a test): the floor under `/v1/send` on this machine. The least work any design must do
 * to accept a personalised message durably, DKIM-sign it and hand it to an SMTP server, with none of the
 * platform: a bare `node:http` server, one group-committed INSERT per batch of accepted requests, a render
 * by string replacement, a single-part message, an RSA-2048 DKIM signature (simple/simple), eight raw SMTP
 * connections with pipelined envelopes, one UPDATE per batch of sent messages. The clients, their request
 * body and the SMTP sink are `bench/send.ts`'s. It prints CPU per delivered message of the floor server, its
 * PostgreSQL backends and the bench process (clients + sink), and the rate that CPU allows on this machine's
 * cores. What the platform costs per message above this floor is what the product adds (keys, rate limits,
 * contacts, RPC, outbox and bus, status rows, activity, Liquid, multipart MIME).
 *
 *   node --import tsx bench/send-floor.ts      # BENCH_REQUESTS=10000 BENCH_CONNECTIONS=64 FLOOR_SMTP_CONNECTIONS=8
 */
import { spawn } from 'node:child_process';
import { createHash, createPrivateKey, randomUUID, sign, type KeyObject } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import pg from 'pg';
import { startSmtpSink } from '@svc/messaging';
import { testDkimKey } from '../services/messaging/src/delivery/test-dkim-key.js';
import { freePort, stopProcess, waitFor, portOpen } from '../test/support/processes.js';
import {
  backendCpu,
  cpuSeconds,
  fmt,
  onCleanup,
  PG_SERVER,
  peakRssReport,
  run,
  runClients,
  runPrefix,
  sendBody,
} from './support.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 10_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const SMTP_CONNECTIONS = Number(process.env.FLOOR_SMTP_CONNECTIONS ?? 8);
const DOMAIN = 'floor.bench.example';
const SELECTOR = 'floor';

// ---------------------------------------------------------------------------------------------------------
// The floor server (this file run with the argument `server`).

interface Accepted {
  id: string;
  to: string;
  from: string;
  subject: string;
  html: string;
}

/** `{{name}}` and `{{name ?? "default"}}`, HTML-escaped: the least a personalised body needs. */
function render(template: string, data: Record<string, unknown>, html: boolean): string {
  const tag = /\{\{\s*(\w+)(?:\s*\?\?\s*"([^"]*)")?\s*\}\}/g;
  return template.replace(tag, (_m, key: string, fallback?: string) => {
    const text = String(data[key] ?? fallback ?? '');
    return html ? text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`) : text;
  });
}

/** Collects items and hands each tick's items to `flush` in one call; the next batch waits for the last. */
function batcher<T>(flush: (items: T[]) => Promise<void>): (item: T) => void {
  let pending: T[] = [];
  let running = false;
  const drain = async () => {
    running = true;
    while (pending.length) {
      const items = pending;
      pending = [];
      await flush(items).catch((err) => process.stderr.write(`floor: ${(err as Error).message}\n`));
    }
    running = false;
  };
  return (item) => {
    pending.push(item);
    if (!running) setImmediate(drain);
  };
}

/** A DKIM-signed single-part HTML message (c=simple/simple, rsa-sha256). */
function signedMessage(m: Accepted, key: KeyObject): string {
  const body = `${m.html}\r\n`;
  const headers = [
    `From: ${m.from}`,
    `To: ${m.to}`,
    `Subject: ${m.subject}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <${m.id}@${DOMAIN}>`,
    'MIME-Version: 1.0',
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
  ];
  const bh = createHash('sha256').update(body).digest('base64');
  const dkim =
    `DKIM-Signature: v=1; a=rsa-sha256; c=simple/simple; d=${DOMAIN}; s=${SELECTOR}; ` +
    `h=from:to:subject:date:message-id; bh=${bh}; b=`;
  const signed = `${headers.slice(0, 5).join('\r\n')}\r\n${dkim}`;
  const b = sign('sha256', Buffer.from(signed), key).toString('base64');
  return `${dkim}${b}\r\n${headers.join('\r\n')}\r\n\r\n${body}`;
}

/** One SMTP connection sending messages from a shared queue: envelope pipelined, then the data. */
async function smtpSender(port: number, next: () => Promise<Accepted>, key: KeyObject, sent: (id: string) => void) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  let buffered = '';
  const waiting: Array<(line: string) => void> = [];
  const replies: string[] = [];
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let at = buffered.indexOf('\r\n');
    while (at >= 0) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 2);
      if (line[3] !== '-') (waiting.shift() ?? ((l: string) => replies.push(l)))(line);
      at = buffered.indexOf('\r\n');
    }
  });
  const reply = (expect: string) =>
    new Promise<void>((resolve, reject) => {
      const check = (line: string) =>
        line.startsWith(expect) ? resolve() : reject(new Error(`SMTP: expected ${expect}, got ${line}`));
      const early = replies.shift();
      if (early !== undefined) check(early);
      else waiting.push(check);
    });
  await reply('220');
  socket.write(`EHLO ${DOMAIN}\r\n`);
  await reply('250');
  for (;;) {
    const m = await next();
    const data = signedMessage(m, key).replace(/^\./gm, '..');
    socket.write(`MAIL FROM:<${m.from}>\r\nRCPT TO:<${m.to}>\r\nDATA\r\n`);
    await Promise.all([reply('250'), reply('250'), reply('354')]);
    socket.write(`${data}.\r\n`);
    await reply('250');
    sent(m.id);
  }
}

async function server(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.FLOOR_DB, max: 8 });
  await pool.query(
    `CREATE TABLE emails (id uuid PRIMARY KEY, to_email text NOT NULL, subject text NOT NULL, html text NOT NULL,
       status text NOT NULL DEFAULT 'queued', created_at timestamptz NOT NULL DEFAULT now(), sent_at timestamptz)`,
  );
  const key = createPrivateKey(process.env.FLOOR_DKIM_KEY!);
  const queue: Accepted[] = [];
  const idle: Array<(m: Accepted) => void> = [];
  const deliver = (m: Accepted) => {
    const sender = idle.shift();
    if (sender) sender(m);
    else queue.push(m);
  };
  const next = () => new Promise<Accepted>((resolve) => (queue.length ? resolve(queue.shift()!) : idle.push(resolve)));
  const markSent = batcher<string>(async (ids) => {
    await pool.query(`UPDATE emails SET status = 'sent', sent_at = now() WHERE id = ANY($1::uuid[])`, [ids]);
  });
  const accept = batcher<{ m: Accepted; res: http.ServerResponse }>(async (items) => {
    const cols = [items.map((i) => i.m.id), items.map((i) => i.m.to), items.map((i) => i.m.subject)];
    await pool.query(
      `INSERT INTO emails (id, to_email, subject, html)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[])`,
      [...cols, items.map((i) => i.m.html)],
    );
    for (const { m, res } of items) {
      res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ id: m.id }));
      deliver(m);
    }
  });
  const smtpPort = Number(process.env.FLOOR_SMTP_PORT);
  for (let i = 0; i < SMTP_CONNECTIONS; i++) {
    smtpSender(smtpPort, next, key, markSent).catch((err) => {
      process.stderr.write(`floor SMTP: ${(err as Error).message}\n`);
      process.exit(1);
    });
  }
  http
    .createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let body: {
          to?: { email?: unknown };
          from?: { email?: unknown };
          subject?: unknown;
          body?: unknown;
          data?: {};
        };
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          res.writeHead(400).end();
          return;
        }
        const to = body.to?.email;
        const from = body.from?.email;
        if (typeof to !== 'string' || typeof from !== 'string' || typeof body.subject !== 'string') {
          res.writeHead(422).end();
          return;
        }
        const data = (body.data ?? {}) as Record<string, unknown>;
        const subject = render(body.subject, data, false).replace(/[\r\n]/g, ' ');
        const html = render(String(body.body ?? ''), data, true);
        accept({ m: { id: randomUUID(), to, from, subject, html }, res });
      });
    })
    .listen(Number(process.env.FLOOR_PORT), '127.0.0.1');
}

// ---------------------------------------------------------------------------------------------------------
// The bench: clients, sink, the floor server in a child process.

async function main(): Promise<void> {
  const dkim = testDkimKey(DOMAIN, SELECTOR);
  let delivered = 0;
  let lastDeliveryAt = 0;
  let firstRaw: Buffer | undefined;
  const sink = await startSmtpSink({
    keep: 1,
    onMessage: (m) => {
      delivered++;
      firstRaw ??= m.raw;
      lastDeliveryAt = performance.now();
    },
  });
  onCleanup(() => sink.close());
  const prefix = runPrefix('sendfloor');
  const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await admin.connect();
  onCleanup(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${prefix} WITH (FORCE)`);
    await admin.end();
  });
  await admin.query(`CREATE DATABASE ${prefix}`);
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, 'server'], {
    env: {
      ...process.env,
      FLOOR_DB: `${PG_SERVER}/${prefix}`,
      FLOOR_PORT: String(port),
      FLOOR_SMTP_PORT: String(sink.port),
      FLOOR_DKIM_KEY: dkim.privateKey,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  onCleanup(() => stopProcess(child));
  await waitFor('floor server', () => portOpen(port), child);

  const base = `http://127.0.0.1:${port}`;
  const load = () => os.loadavg()[0].toFixed(1);
  const loadBefore = load();
  const serverBefore = cpuSeconds(child.pid);
  const pgBefore = await backendCpu(admin, prefix);
  const benchBefore = process.cpuUsage();
  const started = performance.now();
  const clients = await runClients(`${base}/v1/send`, {}, (i) => sendBody(i, DOMAIN), REQUESTS, CONNECTIONS);
  const deadline = Date.now() + 120_000;
  while (delivered < clients.ok && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const seconds = (lastDeliveryAt - started) / 1000;
  const serverCpu = cpuSeconds(child.pid) - serverBefore;
  let pgCpu = 0;
  for (const [pid, s] of await backendCpu(admin, prefix)) pgCpu += s - (pgBefore.get(pid) ?? 0);
  const bench = process.cpuUsage(benchBefore);
  const benchCpu = (bench.user + bench.system) / 1e6;
  const verified = firstRaw
    ? (await dkim.verify(firstRaw)).map((r: { status: { result: string } }) => r.status.result)
    : [];
  const ms = (s: number) => fmt((1000 * s) / Math.max(delivered, 1), 2);
  const total = serverCpu + pgCpu + benchCpu;
  process.stdout.write(
    [
      `requests: ${REQUESTS} (${CONNECTIONS} clients), accepted: ${clients.ok}, failed: ${clients.failed}` +
        (clients.failed ? ` (${clients.failures})` : ''),
      `accepted: ${fmt(clients.ok / clients.seconds)} requests/s (p50 ${clients.p50} ms, p99 ${clients.p99} ms)`,
      `delivered: ${delivered} messages in ${fmt(seconds, 2)} s: ${fmt(delivered / seconds)} messages/s; ` +
        `DKIM of the first message: ${verified.join(', ') || 'none received'}`,
      `CPU per delivered message: floor server ${ms(serverCpu)} ms, PostgreSQL ${ms(pgCpu)} ms, ` +
        `bench (clients + SMTP sink) ${ms(benchCpu)} ms, total ${ms(total)} ms`,
      `at that CPU, ${os.cpus().length} busy cores deliver at most ${fmt((os.cpus().length * delivered) / total)} ` +
        `messages/s (${fmt((os.cpus().length * delivered) / (serverCpu + pgCpu))}/s if the clients and sink were free)`,
      `${peakRssReport({ floor: child.pid })}; load average ${loadBefore} before, ${load()} after`,
    ].join('\n') + '\n',
  );
}

if (process.argv[2] === 'server') {
  server().catch((err) => {
    process.stderr.write(`floor server: ${(err as Error).stack}\n`);
    process.exit(1);
  });
} else {
  run(main, import.meta.url);
}
