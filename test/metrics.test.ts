import { readFileSync } from 'node:fs';
import path from 'node:path';
import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';
import { freePort, httpOk, portOpen, ROOT, startPlatform, waitFor } from './support/processes.js';

// Prometheus metrics: the gateway's GET /metrics (no API key) and each service process's METRICS_PORT
// (the test platform gives every service one), scraped and parsed from the text exposition format.

const metricsUrls: Record<string, string> = JSON.parse(
  readFileSync(path.join(ROOT, '.test-run', 'platform.json'), 'utf8'),
).metricsUrls;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of an exposition text: `name{a="b",...} value [timestamp]`; comments skipped. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

let t: Tenant;
let domain: string;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
});

describe('Prometheus metrics', () => {
  test('the gateway counts requests by route template, method and status, with latency histograms', async () => {
    const created = await call('POST', '/contacts', { email: uniqueEmail('metrics') }, { key: t.secretKey });
    expect([200, 201]).toContain(created.status);
    for (let i = 0; i < 2; i++) {
      expect((await call('GET', `/contacts/${created.body.id}`, undefined, { key: t.secretKey })).status).toBe(200);
    }
    // A path no route matches is one `unmatched` series, not one per URL.
    expect((await call('GET', `/no-such-route-${Date.now()}`)).status).toBe(404);

    const samples = await scrape(`${platform.gatewayUrl}/metrics`);
    const byId = find(samples, 'http_requests_total', { route: '/contacts/:id', method: 'GET', status: '200' });
    expect(byId).toHaveLength(1);
    expect(byId[0].value).toBeGreaterThanOrEqual(2);
    expect(find(samples, 'http_requests_total', { route: 'unmatched', status: '404' })[0]?.value).toBeGreaterThan(0);
    expect(samples.some((s) => s.name === 'http_requests_total' && s.labels.route?.startsWith('/no-such'))).toBe(false);
    const buckets = find(samples, 'http_request_duration_seconds_bucket', { route: '/contacts/:id', method: 'GET' });
    expect(buckets.find((b) => b.labels.le === '+Inf')?.value).toBeGreaterThanOrEqual(2);
    // Node's process metrics.
    expect(find(samples, 'process_cpu_user_seconds_total')).toHaveLength(1);
    expect(find(samples, 'nodejs_eventloop_lag_seconds')).toHaveLength(1);
  });

  test('GET /metrics needs no API key', async () => {
    const res = await call('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(String(res.body)).toContain('# TYPE http_requests_total counter');
  });

  test('a service process serves RPC, outbox, send queue, SMTP and due-work metrics on METRICS_PORT', async () => {
    const to = uniqueEmail('metrics-send');
    const sent = await call(
      'POST',
      '/v1/send',
      { to, from: `hi@${domain}`, subject: 'metrics', body: '<p>m</p>' },
      { key: t.secretKey },
    );
    expect(sent.status).toBe(200);
    await waitForMail(to);

    const samples = await eventually(async () => {
      const s = await scrape(metricsUrls.messaging);
      return find(s, 'smtp_results_total', { result: 'sent' })[0]?.value ? s : undefined;
    });
    const rpc = find(samples, 'rpc_server_calls_total', { code: 'ok' }).filter((s) =>
      s.labels.service.endsWith('MessagingService'),
    );
    expect(rpc.length).toBeGreaterThan(0);
    expect(rpc.every((s) => s.value > 0 && s.labels.method)).toBe(true);
    expect(find(samples, 'rpc_server_duration_seconds_count').length).toBeGreaterThan(0);

    const backlog = find(samples, 'outbox_backlog', { service: 'messaging' });
    expect(backlog).toHaveLength(1);
    expect(backlog[0].value).toBeGreaterThanOrEqual(0);
    expect(find(samples, 'outbox_lag_seconds', { service: 'messaging' })).toHaveLength(1);

    for (const status of ['queued', 'sending']) {
      const depth = find(samples, 'email_queue_depth', { status });
      expect(depth).toHaveLength(1);
      expect(depth[0].value).toBeGreaterThanOrEqual(0);
    }
    expect(find(samples, 'email_queue_oldest_due_seconds')).toHaveLength(1);
    expect(find(samples, 'due_work_claimed_total', { loop: 'delivery' })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(find(samples, 'due_work_completed_total', { loop: 'delivery' })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(find(samples, 'process_resident_memory_bytes')).toHaveLength(1);
    // Consumer lag of the process's durable JetStream consumers.
    const pending = find(samples, 'bus_consumer_pending');
    expect(pending.length).toBeGreaterThan(0);
    expect(pending.every((p) => p.labels.durable.startsWith('messaging') && p.value >= 0)).toBe(true);
    expect(find(samples, 'bus_consumer_ack_pending').length).toBe(pending.length);

    // The contacts process has its own registry: its outbox and its RPCs (the send looked contacts up).
    const contacts = await scrape(metricsUrls.contacts);
    expect(find(contacts, 'outbox_backlog', { service: 'contacts' })).toHaveLength(1);
    expect(find(contacts, 'rpc_server_calls_total').length).toBeGreaterThan(0);
  });

  test('the metrics port answers only GET /metrics', async () => {
    expect((await fetch(metricsUrls.messaging.replace(/\/metrics$/, '/other'))).status).toBe(404);
    expect((await fetch(metricsUrls.messaging, { method: 'POST' })).status).toBe(404);
  });

  test('a gateway with METRICS_PORT serves its metrics there only, not on its public port', async () => {
    // The Helm chart sets METRICS_PORT on every pod: an Ingress routing `/` to the gateway must not publish them.
    const [port, metricsPort] = [await freePort(), await freePort()];
    const env = { ...platform.env, PORT: String(port), METRICS_PORT: String(metricsPort) };
    const gateway = startPlatform(['gateway'], env, 'gateway-metrics-port');
    try {
      await waitFor('gateway', () => httpOk(`http://127.0.0.1:${port}/healthz`), gateway);
      expect((await call('GET', '/healthz', undefined, { baseUrl: `http://127.0.0.1:${port}` })).status).toBe(200);
      const res = await call('GET', '/metrics', undefined, { baseUrl: `http://127.0.0.1:${port}` });
      expect(res.status).toBe(404);
      const samples = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(find(samples, 'http_requests_total', { route: '/healthz', method: 'GET', status: '200' })).toHaveLength(1);
    } finally {
      gateway.kill('SIGTERM');
      await new Promise((resolve) => (gateway.exitCode !== null ? resolve(null) : gateway.once('exit', resolve)));
    }
  });

  test('METRICS_ENABLED=false: no GET /metrics on the gateway, no METRICS_PORT listener', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const env = { ...platform.env, PORT: String(port), METRICS_ENABLED: 'false', METRICS_PORT: String(metricsPort) };
    const gateway = startPlatform(['gateway'], env, 'gateway-no-metrics');
    try {
      await waitFor('gateway', () => httpOk(`http://127.0.0.1:${port}/healthz`), gateway);
      const res = await call('GET', '/metrics', undefined, { baseUrl: `http://127.0.0.1:${port}` });
      expect(res.status).toBe(404);
      expect(await portOpen(metricsPort)).toBe(false);
    } finally {
      gateway.kill('SIGTERM');
      await new Promise((resolve) => (gateway.exitCode !== null ? resolve(null) : gateway.once('exit', resolve)));
    }
  });
});
