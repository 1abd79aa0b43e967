import type { ChildProcess } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { portVariable } from '@svc/lib/config';
import { buildStart } from '../scripts/build-start.js';
import { startTestDns } from './support/dns-server.js';
import {
  freePort,
  freeServicePorts,
  httpOk,
  portOpen,
  serviceReady,
  ROOT,
  RPC_SERVICES,
  startPlatform,
  stopProcess,
  waitFor,
} from './support/processes.js';
import { startTestS3 } from './support/s3-server.js';
import { startTestSmtpSink } from './support/smtp-sink.js';

/**
 * Boots the platform once per test run in distributed mode: one process per service,
 * against the machine's real PostgreSQL, NATS JetStream and Redis, with databases and
 * stream names unique to this run. The services and their ports come from the registry.
 */
export default async function setup(): Promise<void> {
  // Embedded-mode tests start what `npm start` runs: the bundle, built (or found up to date) here.
  await buildStart();
  const runId = `t${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
  const env: Record<string, string> = {
    DATABASE_URL: process.env.TEST_DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/${runId}`,
    NATS_URL: process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222',
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    BUS_PREFIX: runId,
    SESSION_SECRET: 'test-session-secret-0123456789',
    // Distributed mode requires it; the tests' own RPC clients read it from platform.env.
    SERVICE_TOKEN: `test-service-token-${runId}-0123456789abcdef`,
    KEY_CACHE_TTL_SECONDS: '1',
    // Every test signs up and signs in from 127.0.0.1: the per-client login and sign-up limits must not trip
    // (test/login-limits.test.ts starts a gateway with low ones).
    SIGNUPS_PER_HOUR: '1000000',
    LOGIN_FAILURES_PER_CLIENT: '1000000',
    LOGIN_FAILURES_PER_ACCOUNT: '1000000',
    PORT: String(await freePort()),
    ...(await freeServicePorts()),
  };
  env.PUBLIC_URL = `http://localhost:${env.PORT}`;
  // Messaging delivers to a real SMTP server and checks domains against a real DNS server, both on loopback.
  const smtp = await startTestSmtpSink();
  const dns = await startTestDns();
  env.SMTP_URL = smtp.url;
  env.DNS_SERVERS = dns.address;
  env.WEBHOOK_SECRET = 'test-webhook-secret-0123456789';
  // Payment-provider webhooks are signed by the tests themselves; no STRIPE_SECRET_KEY: no call ever reaches Stripe.
  env.STRIPE_WEBHOOK_SECRET = 'whsec_test_billing_0123456789';
  // Inbound mail: the tests send real mail to the messaging service's SMTP listener with nodemailer. Only the
  // shared messaging process listens (not in `env`: tests that start more processes from it would collide).
  const inboundSmtpPort = String(await freePort());
  // Uploads go to a real S3-compatible server on loopback (s3rver).
  const s3 = await startTestS3('uploads');
  Object.assign(env, s3.env);
  env.SEND_RETRY_BASE_MS = '300';
  env.SEND_MAX_ATTEMPTS = '4';
  // Workflow WEBHOOK steps call a receiver on loopback in the tests; quick retries.
  env.WEBHOOK_ALLOW_PRIVATE = 'true';
  env.WEBHOOK_RETRY_BASE_MS = '100';
  env.WEBHOOK_TIMEOUT_MS = '3000';
  // Tracked links to this domain (and its subdomains) show a warning page (test/tracked-link-abuse.test.ts).
  env.TRACKING_BLOCKED_DOMAINS = 'blocked-phish.test';

  const started = (process.env.TEST_SERVICES ?? RPC_SERVICES.join(',')).split(',');
  const children: ChildProcess[] = [];
  const ready: Promise<void>[] = [];
  // Each service process serves its Prometheus metrics on a port of its own (test/metrics.test.ts).
  const metricsUrls: Record<string, string> = {};
  for (const s of started) {
    const metricsPort = String(await freePort());
    metricsUrls[s] = `http://127.0.0.1:${metricsPort}/metrics`;
    const own: Record<string, string> = s === 'messaging' ? { INBOUND_SMTP_PORT: inboundSmtpPort } : {};
    const child = startPlatform([s], { ...env, ...own, METRICS_PORT: metricsPort }, s);
    children.push(child);
    const port = Number(env[portVariable({ name: s })]);
    ready.push(waitFor(s, () => (s === 'gateway' ? portOpen(port) : serviceReady(port)), child));
  }
  try {
    await Promise.all(ready);
    const gateway = startPlatform(['gateway'], env, 'gateway');
    children.push(gateway);
    await waitFor('gateway', () => httpOk(`http://127.0.0.1:${env.PORT}/healthz`), gateway);
  } catch (err) {
    // jest runs no teardown after a failed setup: the started services would live on, holding their
    // database connections (on a shared box they starve the next runs of connections).
    await Promise.allSettled(children.map((c) => stopProcess(c)));
    await Promise.allSettled([smtp.close(), dns.close()]);
    throw err;
  }

  const info = {
    runId,
    env,
    gatewayUrl: `http://127.0.0.1:${env.PORT}`,
    pids: children.map((c) => c.pid),
    metricsUrls,
    inboundSmtpPort,
    smtp: { url: smtp.url, controlUrl: smtp.controlUrl },
    dns: { address: dns.address, controlUrl: dns.controlUrl },
  };
  mkdirSync(path.join(ROOT, '.test-run'), { recursive: true });
  writeFileSync(path.join(ROOT, '.test-run', 'platform.json'), JSON.stringify(info, null, 2));
  (globalThis as Record<string, unknown>).__PLATFORM__ = { children, info, close: [smtp.close, dns.close, s3.close] };
}
