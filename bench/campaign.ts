/**
 * Benchmark (not a test), issue 9 "Speed": one MARKETING campaign to BENCH_CONTACTS (100,000)
 * subscribed contacts, from a verified (DKIM-signing) domain, with a personalised subject and body,
 * delivered to an SMTP sink on loopback in this process. Distributed mode (identity, contacts,
 * messaging, segments, campaigns, gateway: one process each, through bench/support.ts).
 *
 * The contacts come from one CSV import (not timed); the bench waits until the contacts outbox is
 * drained and the services are idle, then sends. It prints seconds from POST /campaigns/{id}/send to
 * status SENT and to the last message received by the sink, messages/s, each process's CPU and peak
 * RSS, and the CPU of the PostgreSQL backends serving the run's databases. Aim: < 60 s to the last
 * message (about 1,700 messages/s).
 *
 *   node --import tsx bench/campaign.ts
 *   BENCH_CONTACTS=100000 BENCH_TIMEOUT_S=900 SMTP_POOL_SIZE=8 DKIM_WORKERS=2 node --import tsx bench/campaign.ts
 *   BENCH_COUNT=1 BENCH_COUNT_DETAIL=1 BENCH_CONTACTS=20000 node --import tsx bench/campaign.ts   # calls per message
 */
import os from 'node:os';
import pg from 'pg';
import { startTestDnsServer, type TestZoneRecords } from '@svc/lib/test-dns-server';
import { startSmtpSink } from '@svc/messaging';
import {
  callCounts,
  callsPerUnit,
  cpuByService,
  backendCpu,
  cpuPerUnit,
  cpuSnapshot,
  fmt,
  machineLine,
  newTenant,
  onCleanup,
  PG_SERVER,
  platformPeakRss,
  run,
  runPrefix,
  startPlatform,
  type Platform,
} from './support.js';
import { writeReport, writeSnapshot } from './table-writes.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000);
const TIMEOUT_S = Number(process.env.BENCH_TIMEOUT_S ?? 900);
/** BENCH_TABLE_STATS=1: also rows written per message by table and index growth (bench/table-writes.ts). */
const TABLE_STATS = process.env.BENCH_TABLE_STATS === '1';
/** BENCH_TIMELINE=1: each second, messages received, messaging's queue depth and the campaign's hand-over counters. */
const TIMELINE = process.env.BENCH_TIMELINE === '1';
const MAX_CSV_BYTES = 5 * 1024 * 1024;
const SERVICES = ['identity', 'contacts', 'messaging', 'segments', 'campaigns'];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let retried503 = 0;

/** A gateway call; a 503 (a dependency was slow or down) is retried after its retryAfter, as a client would. */
async function api(platform: Platform, key: string, method: string, url: string, body?: unknown) {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${platform.gatewayUrl}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const out = { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, any> };
    if (out.status !== 503 || attempt === 5) return out;
    retried503++;
    process.stderr.write(`${method} ${url}: 503 (${out.body.error?.message}); retrying\n`);
    await sleep(1000 * Number(out.body.error?.details?.retryAfter ?? 1));
  }
}

/** One CSV per 5 MB: email, firstName, plan (new contacts are created subscribed, SPEC.md). */
function csvFiles(count: number): Buffer[] {
  const files: Buffer[] = [];
  let lines: string[] = ['email,firstName,plan'];
  let bytes = lines[0].length + 1;
  for (let i = 0; i < count; i++) {
    const line = `reader${i}@campaign.example,Reader${i},${i % 3 ? 'pro' : 'free'}`;
    if (bytes + line.length + 1 > MAX_CSV_BYTES) {
      files.push(Buffer.from(`${lines.join('\n')}\n`));
      lines = ['email,firstName,plan'];
      bytes = lines[0].length + 1;
    }
    lines.push(line);
    bytes += line.length + 1;
  }
  files.push(Buffer.from(`${lines.join('\n')}\n`));
  return files;
}

async function importContacts(platform: Platform, key: string, csv: Buffer): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([Uint8Array.from(csv)], { type: 'text/csv' }), 'contacts.csv');
  const res = await fetch(`${platform.gatewayUrl}/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  const { jobId } = (await res.json()) as { jobId?: string };
  if (res.status !== 202 || !jobId) throw new Error(`import upload: ${res.status}`);
  for (const deadline = Date.now() + 600_000; Date.now() < deadline; await sleep(250)) {
    const job = (await api(platform, key, 'GET', `/contacts/import/${jobId}`)).body;
    if (job.status === 'completed') return;
    if (job.status === 'failed') throw new Error(`import failed: ${job.failure}`);
  }
  throw new Error('import did not complete in 10 minutes');
}

async function unpublished(db: pg.Client): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL');
  return rows[0].n;
}

/** Waits until the platform's processes together use less than a fifth of a core for two seconds in a row. */
async function settle(platform: Platform, maxSeconds: number): Promise<void> {
  let quiet = 0;
  for (let i = 0; i < maxSeconds && quiet < 2; i++) {
    const a = cpuByService(platform);
    await sleep(1000);
    const b = cpuByService(platform);
    const used = Object.keys(b).reduce((sum, k) => sum + (b[k] - a[k]), 0);
    quiet = used < 0.2 ? quiet + 1 : 0;
  }
}

run(
  async () => {
    console.log(machineLine());
    let received = 0;
    let firstAt = 0;
    let lastAt = 0;
    const sink = await startSmtpSink({
      keep: 5,
      onMessage: () => {
        received++;
        lastAt = performance.now();
        firstAt ||= lastAt;
      },
    });
    onCleanup(() => sink.close());
    const zone: Record<string, TestZoneRecords> = {};
    const dns = await startTestDnsServer(zone);
    onCleanup(() => dns.close());

    const prefix = runPrefix('campaign');
    const platform = await startPlatform(prefix, SERVICES, {
      SMTP_URL: sink.url,
      DNS_SERVERS: dns.address,
      SEND_RATE_PER_SECOND: '1000000',
      SMTP_POOL_SIZE: process.env.SMTP_POOL_SIZE ?? '8',
    });
    console.log(
      `platform ready (${SERVICES.join(', ')}, gateway), prefix ${prefix}; ` +
        `DKIM_WORKERS=${process.env.DKIM_WORKERS ?? '(default: one per CPU, niced)'}, ` +
        `SMTP_POOL_SIZE=${process.env.SMTP_POOL_SIZE ?? '8'}`,
    );
    const tenant = await newTenant(platform.gatewayUrl);
    const key = tenant.secretKey;

    const domain = `camp${Date.now().toString(36)}.test`;
    const created = await api(platform, key, 'POST', '/domains', { domain, projectId: tenant.projectId });
    for (const r of created.body.records as { name: string; value: string }[]) {
      (zone[r.name] ??= { TXT: [] }).TXT!.push(r.value.match(/.{1,255}/g)!);
    }
    const verified = await api(platform, key, 'GET', `/domains/${created.body.id}/verify`);
    if (verified.body.status !== 'verified') throw new Error(`domain not verified: ${JSON.stringify(verified.body)}`);

    const tImport = performance.now();
    const files = csvFiles(CONTACTS);
    for (const file of files) await importContacts(platform, key, file);
    const contactsDb = new pg.Client({ connectionString: `${PG_SERVER}/${prefix}_contacts` });
    await contactsDb.connect();
    onCleanup(() => contactsDb.end());
    for (const deadline = Date.now() + 600_000; (await unpublished(contactsDb)) > 0 && Date.now() < deadline; )
      await sleep(250);
    await settle(platform, 120);
    const total = (await api(platform, key, 'GET', '/contacts?limit=1')).body.total;
    console.log(
      `${fmt(CONTACTS)} contacts imported in ${files.length} CSV file(s), outbox drained, services idle: ` +
        `${((performance.now() - tImport) / 1000).toFixed(1)} s (not part of the figures); ` +
        `contacts in the project: ${fmt(total)}`,
    );

    const campaign = await api(platform, key, 'POST', '/campaigns', {
      name: 'Benchmark newsletter',
      subject: 'Hello {{firstName}}, your {{plan}} news',
      body:
        '<h1>Hi {{firstName}}</h1><p>You are on the {{plan}} plan.</p>' +
        '<p><a href="https://example.com/read?c={{email}}">Read the issue</a></p>',
      from: `news@${domain}`,
      fromName: 'Bench News',
      type: 'MARKETING',
      audienceType: 'ALL',
    });
    if (campaign.status !== 201) throw new Error(`campaign: ${campaign.status} ${JSON.stringify(campaign.body)}`);
    const id = campaign.body.data.id as string;

    const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
    await admin.connect();
    onCleanup(() => admin.end());
    const calls0 = await callCounts(platform);
    const writesBefore = TABLE_STATS ? await writeSnapshot(admin, prefix) : undefined;
    const pgBefore = await backendCpu(admin, prefix);
    const snapBefore = await cpuSnapshot(platform, admin);
    const cpuBefore = cpuByService(platform);
    const benchBefore = process.cpuUsage();
    const loadBefore = os.loadavg()[0];
    received = 0;
    firstAt = 0;

    let timeline: (() => void) | undefined;
    let starvedSamples = () => 0;
    if (TIMELINE) {
      const messagingDb = new pg.Client({ connectionString: `${PG_SERVER}/${prefix}_messaging` });
      const campaignsDb = new pg.Client({ connectionString: `${PG_SERVER}/${prefix}_campaigns` });
      await Promise.all([messagingDb.connect(), campaignsDb.connect()]);
      onCleanup(() => messagingDb.end());
      onCleanup(() => campaignsDb.end());
      let last = 0;
      let cpuLast = cpuByService(platform);
      let tick = 0;
      let minQueued = Number.POSITIVE_INFINITY;
      let starved = 0;
      // Messaging's queue depth 4 times a second (its minimum printed): under 400 the delivery lanes are not all full.
      const timer = setInterval(async () => {
        const q = await messagingDb.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM emails WHERE status = 'queued'`,
        );
        minQueued = Math.min(minQueued, q.rows[0].n);
        if (q.rows[0].n < 400 && received > 0 && received < CONTACTS) starved++;
        if (++tick % 4) return;
        const t = ((performance.now() - t0) / 1000).toFixed(1);
        const c = await campaignsDb.query(
          `SELECT total_recipients AS tot, snapshot_done AS sd, handover_queued AS hq, sent_count AS sc
           FROM campaigns WHERE id = $1`,
          [id],
        );
        const cpuNow = cpuByService(platform);
        const cpuText = Object.keys(cpuNow)
          .map((k) => `${k.slice(0, 4)} ${Math.round(100 * (cpuNow[k] - cpuLast[k]))}`)
          .join(' ');
        cpuLast = cpuNow;
        const r = c.rows[0] ?? {};
        console.log(
          `t ${t} recv +${received - last} (${received}) queued ${q.rows[0].n} (min ${minQueued}) ` +
            `snap ${r.tot}${r.sd ? '*' : ''} handed ${r.hq} sent ${r.sc} | ${cpuText} | ` +
            `load ${os.loadavg()[0].toFixed(1)}`,
        );
        minQueued = Number.POSITIVE_INFINITY;
        last = received;
      }, 250);
      timeline = () => clearInterval(timer);
      starvedSamples = () => starved;
    }
    const t0 = performance.now();
    const sent = await api(platform, key, 'POST', `/campaigns/${id}/send`);
    if (sent.status !== 200) throw new Error(`send: ${sent.status} ${JSON.stringify(sent.body)}`);
    let sentAt = 0;
    let state: Record<string, any> = {};
    let lastProgress = performance.now();
    let lastCount = 0;
    const deadline = t0 + TIMEOUT_S * 1000;
    while (performance.now() < deadline) {
      if (!sentAt) {
        state = (await api(platform, key, 'GET', `/campaigns/${id}`)).body;
        if (state.status === 'SENT') sentAt = performance.now();
        else if (state.status !== 'SENDING') throw new Error(`campaign is ${state.status}`);
      }
      if (sentAt && received >= (state.totalRecipients ?? CONTACTS)) break;
      if (received !== lastCount) {
        lastCount = received;
        lastProgress = performance.now();
      } else if (performance.now() - lastProgress > 60_000) break; // stalled: report what arrived
      await sleep(100);
    }
    const end = lastAt || performance.now();
    timeline?.();
    if (TIMELINE)
      console.log(
        `timeline: messaging's queue under 400 (delivery lanes not all full) in ${starvedSamples()} quarter-seconds`,
      );
    const cpuAfter = cpuByService(platform);
    const bench = process.cpuUsage(benchBefore);
    const pgAfter = await backendCpu(admin, prefix);
    const snapAfter = await cpuSnapshot(platform, admin);
    let pgCpu = 0;
    for (const [pid, s] of pgAfter) if (Number.isFinite(s)) pgCpu += s - (pgBefore.get(pid) ?? 0);
    state = (await api(platform, key, 'GET', `/campaigns/${id}`)).body;
    const calls1 = await callCounts(platform);
    if (writesBefore) {
      await settle(platform, 30);
      await sleep(1500); // backends flush their table statistics at most once a second
      console.log(writeReport(writesBefore, await writeSnapshot(admin, prefix), received));
    }

    const seconds = (end - t0) / 1000;
    const cpu = Object.entries(cpuAfter)
      .map(([s, v]) => `${s} ${fmt(v - cpuBefore[s], 1)} s (${fmt((100 * (v - cpuBefore[s])) / seconds)}%)`)
      .join(', ');
    const complete = received >= CONTACTS;
    console.log(
      [
        '',
        `campaign ${id}: status ${state.status}, totalRecipients ${fmt(state.totalRecipients)}, ` +
          `sentCount ${fmt(state.sentCount)}, deliveredCount ${fmt(state.deliveredCount)}`,
        `send -> SENT: ${sentAt ? `${((sentAt - t0) / 1000).toFixed(1)} s` : `not SENT after ${TIMEOUT_S} s`}`,
        `send -> last message: ${seconds.toFixed(1)} s, ${fmt(received)} of ${fmt(CONTACTS)} messages received` +
          (complete ? '' : ' (INCOMPLETE: timed out or stalled)'),
        `throughput: ${fmt(received / seconds)} messages/s from the send; ` +
          `${fmt(received / ((end - firstAt) / 1000 || 1))} messages/s from the first to the last message ` +
          `(first after ${((firstAt - t0) / 1000).toFixed(1)} s)`,
        `CPU from the send to the last message (100% = one core): ${cpu}; ` +
          `PostgreSQL backends of the run ${fmt(pgCpu, 1)} s (${fmt((100 * pgCpu) / seconds)}%); ` +
          `bench process (SMTP sink, polling) ${fmt((bench.user + bench.system) / 1e6, 1)} s`,
        cpuPerUnit(snapBefore, snapAfter, received, 'message received'),
        ...(Object.keys(calls1).length ? [`per message: ${callsPerUnit(calls0, calls1, received)}`] : []),
        platformPeakRss(platform),
        `load average: ${loadBefore.toFixed(1)} at the send, ${os.loadavg()[0].toFixed(1)} at the end; ` +
          `503 answers retried during the run: ${retried503}`,
        `aim (issue 9): < 60 s to the last message for 100,000 recipients: ${
          CONTACTS < 100_000
            ? 'not measured at full size'
            : complete && seconds < 60
              ? 'met'
              : `not met${complete ? '' : ` (incomplete after ${seconds.toFixed(0)} s)`}`
        }`,
      ].join('\n'),
    );
  },
  import.meta.url,
);
