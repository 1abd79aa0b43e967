import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Interceptor } from '@connectrpc/connect';
import { Code, ConnectError } from '@connectrpc/connect';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DueWorkHooks } from './due-work.js';
import { listen } from './listen.js';
import type { Logger } from './logger.js';

/**
 * Prometheus metrics: one registry per process (embedded mode: every service in it). The gateway
 * serves it at GET /metrics; a process started with METRICS_PORT also serves it there (services
 * without a gateway in their process). Gauges that need a query are computed when scraped.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequests = new Counter({
  name: 'http_requests_total',
  help: 'Gateway HTTP requests by route template, method and status',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Gateway HTTP request latency by route template and method',
  labelNames: ['route', 'method'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

/** Paths no route matched are one series, not one per URL a scanner tries. */
export function observeHttp(route: string | undefined, method: string, status: number, seconds: number): void {
  const r = route ?? 'unmatched';
  httpRequests.inc({ route: r, method, status: String(status) });
  httpDuration.observe({ route: r, method }, seconds);
}

export const rpcCalls = new Counter({
  name: 'rpc_server_calls_total',
  help: 'RPC calls served, by service, method and Connect code',
  labelNames: ['service', 'method', 'code'] as const,
  registers: [registry],
});

export const rpcDuration = new Histogram({
  name: 'rpc_server_duration_seconds',
  help: 'RPC call latency by service and method',
  labelNames: ['service', 'method'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

/** Outermost RPC interceptor: counts every call with its outcome's Connect code (`ok` on success). */
export function rpcMetricsInterceptor(): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const labels = { service: req.service.typeName, method: req.method.name };
    let code = 'ok';
    try {
      return await next(req);
    } catch (err) {
      code = Code[ConnectError.from(err).code].replace(/[A-Z]/g, (c, i) => (i ? '_' : '') + c.toLowerCase());
      throw err;
    } finally {
      rpcCalls.inc({ ...labels, code });
      rpcDuration.observe(labels, (performance.now() - started) / 1000);
    }
  };
}

/** What a scrape-time gauge asks: a service's database (a pg Pool fits). */
export interface MetricsQueryable {
  query<R extends Record<string, unknown>>(sql: string, values?: unknown[]): Promise<{ rows: R[] }>;
}

const outboxes = new Map<string, MetricsQueryable>();

export const outboxBacklog = new Gauge({
  name: 'outbox_backlog',
  help: 'Outbox rows committed but not yet published to the bus, by service',
  labelNames: ['service'] as const,
  registers: [registry],
  async collect() {
    await collectOutboxes();
  },
});

export const outboxLag = new Gauge({
  name: 'outbox_lag_seconds',
  help: 'Age of the oldest unpublished outbox row (relay lag), by service; 0 when none is pending',
  labelNames: ['service'] as const,
  registers: [registry],
  async collect() {
    await collectOutboxes();
  },
});

let outboxPass: Promise<void> | undefined;

/** One query per service database serves both outbox gauges (a scrape asks once for both). */
function collectOutboxes(): Promise<void> {
  outboxPass ??= readOutboxes().finally(() => {
    outboxPass = undefined;
  });
  return outboxPass;
}

/** A database that does not answer is left out of this scrape. */
async function readOutboxes(): Promise<void> {
  outboxBacklog.reset();
  outboxLag.reset();
  await Promise.all(
    [...outboxes].map(async ([service, db]) => {
      try {
        const { rows } = await db.query<{ n: string; age: number | null }>(
          `SELECT count(*)::text AS n, extract(epoch FROM now() - min(created_at))::float8 AS age
           FROM outbox WHERE published_at IS NULL`,
        );
        outboxBacklog.set({ service }, Number(rows[0].n));
        outboxLag.set({ service }, rows[0].age ?? 0);
      } catch {
        /* database down: the series is absent for this scrape */
      }
    }),
  );
}

/** runtime.ts registers each service database's outbox when it opens it. */
export function watchOutbox(service: string, db: MetricsQueryable): () => void {
  outboxes.set(service, db);
  return () => outboxes.delete(service);
}

const dueClaimed = new Counter({
  name: 'due_work_claimed_total',
  help: 'Items claimed by a due-work loop (email queue, jobs, workflow steps...)',
  labelNames: ['loop'] as const,
  registers: [registry],
});
const dueCompleted = new Counter({
  name: 'due_work_completed_total',
  help: 'Items whose batch a due-work loop finished',
  labelNames: ['loop'] as const,
  registers: [registry],
});
const dueFailed = new Counter({
  name: 'due_work_failed_total',
  help: 'Due-work passes that failed (retried when the leases expire)',
  labelNames: ['loop'] as const,
  registers: [registry],
});
const dueInFlight = new Gauge({
  name: 'due_work_in_flight',
  help: 'Items claimed by a due-work loop and not yet finished',
  labelNames: ['loop'] as const,
  registers: [registry],
});
const dueBatch = new Histogram({
  name: 'due_work_batch_duration_seconds',
  help: 'Time a due-work loop took to run one claimed batch',
  labelNames: ['loop'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

/** Metrics of one DueWorkLoop (lib/due-work.ts calls these beside the loop's own hooks). */
export function dueWorkMetrics(loop: string): Required<DueWorkHooks> {
  dueInFlight.set({ loop }, 0);
  return {
    claimed(count) {
      dueClaimed.inc({ loop }, count);
      dueInFlight.inc({ loop }, count);
    },
    finished(count, ms) {
      dueCompleted.inc({ loop }, count);
      dueInFlight.dec({ loop }, count);
      dueBatch.observe({ loop }, ms / 1000);
    },
    failed() {
      dueFailed.inc({ loop });
    },
  };
}

/** Undoes the in-flight count of a batch that threw (claimed, never finished). */
export function dueWorkAbandoned(loop: string, count: number): void {
  dueInFlight.dec({ loop }, count);
}

/**
 * A gauge computed by a query when scraped (queue depths): `read` returns label values and numbers;
 * a failing read leaves the gauge empty for that scrape.
 */
export function scrapeGauge<L extends string>(opts: {
  name: string;
  help: string;
  labelNames: readonly L[];
  read(): Promise<Array<{ labels: Record<L, string>; value: number }>>;
}): Gauge<L> {
  const existing = registry.getSingleMetric(opts.name);
  if (existing) registry.removeSingleMetric(opts.name);
  return new Gauge<L>({
    name: opts.name,
    help: opts.help,
    labelNames: opts.labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const { labels, value } of await opts.read()) this.set(labels as never, value);
      } catch {
        /* dependency down: absent for this scrape */
      }
    },
  });
}

/** Per durable consumer of the bus (NATS JetStream): backlog not yet delivered, and delivered but unacknowledged. */
export function watchConsumerLag(
  read: () => Promise<Array<{ durable: string; pending: number; ackPending: number }>>,
): void {
  let pass: Promise<Awaited<ReturnType<typeof read>>> | undefined;
  // One round of consumer-info requests serves both gauges of a scrape.
  const once = () => {
    pass ??= read().finally(() => {
      pass = undefined;
    });
    return pass;
  };
  scrapeGauge({
    name: 'bus_consumer_pending',
    help: 'Messages of a durable consumer not yet delivered (consumer lag)',
    labelNames: ['durable'],
    read: async () => (await once()).map((c) => ({ labels: { durable: c.durable }, value: c.pending })),
  });
  scrapeGauge({
    name: 'bus_consumer_ack_pending',
    help: 'Messages delivered to a durable consumer and not yet acknowledged',
    labelNames: ['durable'],
    read: async () => (await once()).map((c) => ({ labels: { durable: c.durable }, value: c.ackPending })),
  });
}

export const smtpResults = new Counter({
  name: 'smtp_results_total',
  help: 'Delivery attempts by result: sent (2xx), retry (4xx or connection trouble), bounced (5xx), failed',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const workflowLoopGuards = new Counter({
  name: 'workflow_loop_guard_total',
  help:
    'Workflow loops stopped (README "Workflows", loop guards): chain_depth (an enrolment refused), ' +
    'busy_steps (an execution failed), automatic_mail (received auto-reply that starts no workflow)',
  labelNames: ['guard'] as const,
  registers: [registry],
});

export const trackingAutomatedHits = new Counter({
  name: 'tracking_automated_hits_total',
  help:
    'Opens and clicks answered and not recorded as automated (README "Tracking"): kind open or click, reason ' +
    "user_agent (a scanner's or bot's) or burst (several links of one email from one client within seconds)",
  labelNames: ['kind', 'reason'] as const,
  registers: [registry],
});

export const trackingLinksRefused = new Counter({
  name: 'tracking_links_refused_total',
  help:
    'Tracked links answered with a warning page instead of a redirect (README "Links that do not redirect"): reason ' +
    'project_suspended, project_deleted, blocked_domain or unsafe_url',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/** The exposition text and its content type. */
export async function scrape(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/** METRICS_PORT: a plain HTTP listener answering GET /metrics, for processes without the gateway. */
export async function serveMetrics(
  host: string,
  port: number,
  logger: Logger,
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    scrape().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (err) => {
        logger.warn({ err }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('scrape failed\n');
      },
    );
  });
  await listen(server, port, host, 'metrics');
  const bound = (server.address() as AddressInfo).port;
  logger.info({ port: bound }, 'metrics listening');
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
