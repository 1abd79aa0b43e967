/**
 * Micro-benchmark (not a test): how many personalised messages per second the delivery worker
 * can build and DKIM-sign (RSA-2048), with no database, bus or SMTP in the way:
 *
 *   - "before": nodemailer with the PEM key string on the main thread (the code before the
 *     signing pool: the key is decoded again for every message);
 *   - "inline": buildMessage on the main thread (DKIM_WORKERS=0; the key decoded once);
 *   - "pool of N": the SigningPool with N worker threads (DKIM_WORKERS; its default is one per CPU).
 *
 *   node --import tsx bench/dkim.ts        # BENCH_MESSAGES=3000 BENCH_INFLIGHT=64 BENCH_POOL_SIZES=1,2
 */
import { generateKeyPairSync } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { createLogger } from '@svc/lib/logger';
import { buildMessage } from '../services/messaging/src/delivery/mime-build.js';
import type { MailMessage } from '../services/messaging/src/delivery/smtp-transport.js';
import { SigningPool } from '../services/messaging/src/workers/signing-pool.js';
import { fmt, machine, peakRssReport, run } from './support.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 3000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const POOL_SIZES = (process.env.BENCH_POOL_SIZES ?? `1,${os.availableParallelism()}`).split(',').map(Number);

const { privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});

/** What the delivery worker hands over for one recipient: rendered subject and body, DKIM key of the sender domain. */
function message(i: number): MailMessage {
  return {
    messageId: `<bench.${i}.${Date.now()}@news.bench.test>`,
    from: { name: 'Bench News', address: 'news@bench.test' },
    to: { name: `Reader ${i}`, address: `reader${i}@bench.example` },
    subject: `Hello Reader${i}, issue ${i}`,
    html:
      `<h1>Hi Reader${i}</h1><p>Your plan: ${i % 2 ? 'pro' : 'free'}. ` +
      `<a href="https://example.com/read?i=${i}">Read</a></p>`.repeat(4),
    text: `Hi Reader${i}\n\nYour plan: ${i % 2 ? 'pro' : 'free'}. Read: https://example.com/read?i=${i}\n`.repeat(4),
    headers: {
      'List-Unsubscribe': `<https://bench.test/u/${i}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    },
    dkim: { domainName: 'bench.test', keySelector: 'bench', privateKey },
  };
}

interface Figures {
  perSecond: number;
  /** CPU of the whole process (every thread), % of one core. */
  cpuPct: number;
  /** How busy the main thread's event loop was (what the rest of the platform competes for). */
  mainLoopPct: number;
}

/** Runs `count` builds with at most INFLIGHT at once. */
async function drive(build: (m: MailMessage) => Promise<unknown>, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: INFLIGHT }, async () => {
      for (let i = next++; i < count; i = next++) await build(message(i));
    }),
  );
}

/** Builds MESSAGES messages after a warm-up (threads started, code optimised in every thread). */
async function measure(build: (m: MailMessage) => Promise<unknown>): Promise<Figures> {
  await drive(build, 500);
  const cpu0 = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  await drive(build, MESSAGES);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  return {
    perSecond: MESSAGES / seconds,
    cpuPct: (100 * (cpu.user + cpu.system)) / 1e6 / seconds,
    mainLoopPct: 100 * elu.utilization,
  };
}

async function main(): Promise<void> {
  process.stdout.write(
    `${machine()}; load average ${os.loadavg()[0].toFixed(1)}\n` +
      `${fmt(MESSAGES)} messages per run, ${INFLIGHT} in flight, RSA-2048, relaxed/relaxed, sha256\n\n`,
  );
  const logger = createLogger('warn');
  const before = nodemailer.createTransport({ streamTransport: true, buffer: true });
  const rows: [string, Figures][] = [];
  rows.push([
    'before: main thread, PEM decoded per message',
    await measure((m) => before.sendMail(m as SendMailOptions)),
  ]);
  rows.push(['inline: main thread, key decoded once (DKIM_WORKERS=0)', await measure(buildMessage)]);
  for (const size of POOL_SIZES) {
    const pool = new SigningPool({ size, logger });
    try {
      rows.push([`pool of ${size} thread${size === 1 ? '' : 's'}`, await measure((m) => pool.build(m))]);
    } finally {
      await pool.close();
    }
  }
  const base = rows[1][1].perSecond;
  for (const [name, r] of rows) {
    process.stdout.write(
      `${name.padEnd(58)} ${fmt(r.perSecond).padStart(7)} messages/s  ` +
        `(${(r.perSecond / base).toFixed(2)}x inline; CPU ${fmt(r.cpuPct)}% of a core, ` +
        `${((1000 * r.cpuPct) / 100 / r.perSecond).toFixed(2)} ms per message; main event loop ` +
        `${fmt(r.mainLoopPct)}% busy, ${((10 * r.mainLoopPct) / r.perSecond).toFixed(2)} ms per message)\n`,
    );
  }
  // The signing threads run in this process: its peak covers them.
  process.stdout.write(`${peakRssReport({})}; load average after: ${os.loadavg()[0].toFixed(1)}\n`);
}

run(main, import.meta.url);
