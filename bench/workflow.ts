/**
 * Workflow engine benchmark (distributed mode: each service in its own process, machine's PostgreSQL,
 * NATS and Redis; SMTP sink and DNS server in this process).
 *
 * 1. BENCH_CONTACTS (10,000) contacts tracked (POST /v1/track, 64 concurrent clients) into an enabled
 *    workflow TRIGGER -> CONDITION -> SEND_EMAIL -> EXIT: executions completed per second (first
 *    track to last EXITED) and the lag from a contact's track request to its email in the sink.
 * 2. BENCH_DUE (100,000) executions waiting in a DELAY that all fall due at the same instant (rows
 *    written straight into the workflows database, as the DELAY step leaves them): time from the due
 *    instant until every one has moved on (DELAY -> EXIT).
 *
 *   node --import tsx bench/workflow.ts            # BENCH_CONTACTS=10000 BENCH_DUE=100000
 */
import os from 'node:os';
import { startSmtpSink } from '@svc/messaging';
import { startTestDnsServer, type TestZoneRecords } from '@svc/lib/test-dns-server';
import pg from 'pg';
import {
  callCounts,
  callsPerUnit,
  cpuPerUnit,
  cpuSnapshot,
  fmt,
  httpPoster,
  machineLine,
  newTenant,
  onCleanup,
  PG_SERVER,
  platformPeakRss,
  run,
  runPrefix,
  startPlatform,
} from './support.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 10_000);
const DUE = Number(process.env.BENCH_DUE ?? 100_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);

async function main(): Promise<void> {
  const sent = new Map<string, number>();
  const lags: number[] = [];
  let lastMailAt = 0;
  const sink = await startSmtpSink({
    keep: 10,
    onMessage: (m) => {
      const t0 = sent.get(m.to[0]);
      lastMailAt = performance.now();
      if (t0 !== undefined) lags.push(lastMailAt - t0);
    },
  });
  onCleanup(() => sink.close());
  const zone: Record<string, TestZoneRecords> = {};
  const dns = await startTestDnsServer(zone);
  onCleanup(() => dns.close());

  const prefix = runPrefix('workflow');
  const platform = await startPlatform(prefix, ['identity', 'contacts', 'messaging', 'segments', 'workflows'], {
    SMTP_URL: sink.url,
    DNS_SERVERS: dns.address,
    SEND_RATE_PER_SECOND: '1000000',
    SMTP_POOL_SIZE: process.env.SMTP_POOL_SIZE ?? '8',
  });
  const base = platform.gatewayUrl;
  const tenant = await newTenant(base);
  const auth = { authorization: `Bearer ${tenant.secretKey}`, 'content-type': 'application/json' };
  const api = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: auth,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json().catch(() => ({}))) as any;
    if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };

  const domain = `wfbench${Date.now().toString(36)}.test`;
  const created = await api('POST', '/domains', { domain, projectId: tenant.projectId });
  for (const r of created.records as { name: string; value: string }[]) {
    (zone[r.name] ??= { TXT: [] }).TXT!.push(r.value.match(/.{1,255}/g)!);
  }
  const verified = await api('GET', `/domains/${created.id}/verify`);
  if (verified.status !== 'verified') throw new Error(`domain not verified: ${JSON.stringify(verified)}`);

  // TRIGGER -> CONDITION (contact or event data) -> yes: SEND_EMAIL -> EXIT; no: EXIT.
  const w = await api('POST', '/workflows', { name: 'bench', eventName: 'bench.signup' });
  const step = async (type: string, config: unknown) =>
    (await api('POST', `/workflows/${w.id}/steps`, { type, name: type.toLowerCase(), config })).id as string;
  const check = await step('CONDITION', {
    condition: {
      logic: 'OR',
      groups: [
        { filters: [{ field: 'event.data.n', operator: 'gte', value: 0 }] },
        { filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] },
      ],
    },
  });
  const mail = await step('SEND_EMAIL', {
    subject: 'Welcome {{event.n}}',
    body: '<p>Hi {{firstName ?? "there"}}, you are number {{event.n}}.</p>',
    from: `flows@${domain}`,
  });
  const exit = await step('EXIT', {});
  const link = (fromStepId: string, toStepId: string, extra = {}) =>
    api('POST', `/workflows/${w.id}/transitions`, { fromStepId, toStepId, ...extra });
  await link(w.steps[0].id, check);
  await link(check, mail, { branch: 'yes' });
  await link(check, exit, { branch: 'no' });
  await link(mail, exit);
  await api('PATCH', `/workflows/${w.id}`, { enabled: true });

  const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await admin.connect();
  onCleanup(() => admin.end());
  console.log(machineLine());
  const calls0 = await callCounts(platform);
  const cpu0 = await cpuSnapshot(platform, admin);
  const started = performance.now();
  let next = 0;
  let failed = 0;
  let retried = 0;
  const tracks = httpPoster(`${base}/v1/track`, CONNECTIONS, { authorization: `Bearer ${tenant.publicKey}` });
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      for (let i = next++; i < CONTACTS; i = next++) {
        const email = `c${i}@bench.example`;
        sent.set(email, performance.now());
        // An overloaded box answers some requests 5xx (or drops them): retried a few times, then counted.
        let ok = false;
        for (let attempt = 0; attempt < 5 && !ok; attempt++) {
          if (attempt) await new Promise((r) => setTimeout(r, 200 * attempt));
          const status = await tracks
            .post(JSON.stringify({ email, event: 'bench.signup', data: { n: i } }))
            .catch(() => 0);
          ok = status >= 200 && status < 300;
          if (!ok && status) retried++;
        }
        if (!ok) failed++;
      }
    }),
  );
  tracks.close();
  const tracked = (performance.now() - started) / 1000;
  let exited = 0;
  let failedExecutions = 0;
  let lastExitAt = performance.now();
  const deadline = Date.now() + 600_000;
  while (Date.now() < deadline) {
    const r = await api('GET', `/workflows/${w.id}/executions?status=EXITED&pageSize=1`);
    // A FAILED execution (e.g. messaging's render time limit on an overloaded box) is not waited for; asked
    // only while no execution ends (the polls are the workflows process's work too).
    if (r.total === exited) {
      failedExecutions = (await api('GET', `/workflows/${w.id}/executions?status=FAILED&pageSize=1`)).total;
    } else lastExitAt = performance.now();
    exited = r.total;
    if (exited + failedExecutions >= CONTACTS - failed && lags.length >= exited) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const seconds = (lastExitAt - started) / 1000;
  const cpu1 = await cpuSnapshot(platform, admin);
  const calls1 = await callCounts(platform);
  lags.sort((a, b) => a - b);
  const pct = (p: number) => fmt(lags[Math.min(lags.length - 1, Math.floor((p / 100) * lags.length))] / 1000, 2);
  console.log(
    [
      `tracked ${CONTACTS} contacts (${CONNECTIONS} clients) in ${fmt(tracked, 1)} s, ` +
        `${failed} failed, ${retried} retried`,
      `executions EXITED: ${exited} in ${fmt(seconds, 1)} s from the first track: ` +
        `${fmt(exited / seconds)} executions/s${failedExecutions ? ` (${failedExecutions} FAILED)` : ''}`,
      `emails in the sink: ${lags.length}; last at ${fmt((lastMailAt - started) / 1000, 1)} s`,
      `track -> mail lag: p50 ${pct(50)} s, p90 ${pct(90)} s, p99 ${pct(99)} s, max ${pct(100)} s`,
      `${cpuPerUnit(cpu0, cpu1, exited, 'execution (track, enrolment, 4 steps, email queued and delivered)')}; ` +
        `load average ${os.loadavg()[0].toFixed(1)}`,
      ...(Object.keys(calls1).length ? [`per execution: ${callsPerUnit(calls0, calls1, exited)}`] : []),
    ].join('\n'),
  );

  // 2. DUE executions waiting in a DELAY (DELAY -> EXIT) that fall due at the same instant (BENCH_DUE=0: none).
  if (DUE === 0) {
    console.log(platformPeakRss(platform));
    return;
  }
  const w2 = await api('POST', '/workflows', { name: 'bench due', eventName: 'bench.never' });
  const delay = (await api('POST', `/workflows/${w2.id}/steps`, { type: 'DELAY', config: { amount: 1, unit: 'days' } }))
    .id as string;
  const exit2 = (await api('POST', `/workflows/${w2.id}/steps`, { type: 'EXIT', config: {} })).id as string;
  await api('POST', `/workflows/${w2.id}/transitions`, { fromStepId: w2.steps[0].id, toStepId: delay });
  await api('POST', `/workflows/${w2.id}/transitions`, { fromStepId: delay, toStepId: exit2 });
  const db = new pg.Client({ connectionString: `${PG_SERVER}/${prefix}_workflows` });
  await db.connect();
  onCleanup(() => db.end());
  const inserting = performance.now();
  const { rows } = await db.query<{ due: Date }>("SELECT now() + interval '1 day' AS due");
  const far = rows[0].due;
  for (let done = 0; done < DUE; done += 10_000) {
    const n = Math.min(10_000, DUE - done);
    // As a DELAY step leaves them: WAITING, its history row open, due far ahead (moved to one instant below).
    await db.query(
      `WITH e AS (
         INSERT INTO executions (id, project_id, workflow_id, contact_id, status, context, current_step_id,
           current_history_id, due_at, since)
         SELECT gen_random_uuid(), $1, $2, gen_random_uuid(), 'WAITING', '{}', $3, gen_random_uuid(), $5, now()
         FROM generate_series(1, $4)
         RETURNING id, current_history_id
       )
       INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, output)
       SELECT current_history_id, id, $3, 'DELAY', 'WAITING', '{}' FROM e`,
      [tenant.projectId, w2.id, delay, n, far],
    );
  }
  console.log(`${DUE} waiting executions written in ${fmt((performance.now() - inserting) / 1000, 1)} s`);
  const { rows: dueRows } = await db.query<{ at: Date }>(
    `UPDATE executions SET due_at = now() + interval '2 seconds' WHERE workflow_id = $1 RETURNING due_at AS at`,
    [w2.id],
  );
  const dueAt = dueRows[0].at.getTime();
  const cpu2 = await cpuSnapshot(platform, admin);
  let left = DUE;
  let lastLeft = DUE;
  const progress: string[] = [];
  while (left > 0) {
    await new Promise((r) => setTimeout(r, 250));
    const { rows: c } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM executions WHERE workflow_id = $1 AND status IN ('WAITING', 'RUNNING')`,
      [w2.id],
    );
    left = Number(c[0].n);
    if (left !== lastLeft && progress.length < 40) progress.push(`${fmt((Date.now() - dueAt) / 1000, 1)}s:${left}`);
    lastLeft = left;
  }
  const dueSeconds = (Date.now() - dueAt) / 1000;
  const cpu3 = await cpuSnapshot(platform, admin);
  const { rows: st } = await db.query<{ status: string; n: string }>(
    'SELECT status, count(*) AS n FROM executions WHERE workflow_id = $1 GROUP BY status',
    [w2.id],
  );
  console.log(
    [
      `${DUE} executions due at once: all moved on (DELAY -> EXIT) ${fmt(dueSeconds, 1)} s after the due instant: ` +
        `${fmt(DUE / dueSeconds)} executions/s (statuses: ${st.map((s) => `${s.status} ${s.n}`).join(', ')})`,
      `remaining by time after due: ${progress.join(' ')}`,
      `${cpuPerUnit(cpu2, cpu3, DUE, 'execution (DELAY -> EXIT)')}; load average ${os.loadavg()[0].toFixed(1)}`,
      platformPeakRss(platform),
    ].join('\n'),
  );
}

run(main, import.meta.url);
