import type { Bus } from './bus.js';
import type { ConnectRouter } from '@connectrpc/connect';
import type { Config } from './config.js';
import { DbHealth } from './db-health.js';
import { isDependencyUnavailable } from './dependency-errors.js';
import { createPool, ensureDatabase, serviceDatabaseUrl, type Pool } from './db.js';
import type { Logger } from './logger.js';
import { watchOutbox } from './metrics.js';
import { migrate, pendingMigrations, type Migration } from './migrate.js';
import { OUTBOX_MIGRATIONS, OutboxRelay } from './outbox.js';
import { refillLostStreams } from './outbox-replay.js';
import { openStartingPort, startRpcServer, type RpcServer, type StartingPort } from './rpc-server.js';

/** What every service receives from the launcher, in either run mode: `C` is its own config fragment's values. */
export interface Runtime<C extends object = object> {
  config: Config & C;
  logger: Logger;
  bus: Bus;
  /** Embedded mode (every service in one process): internal ports listen on loopback only. */
  embedded: boolean;
}

export interface RunningService {
  name: string;
  stop(): Promise<void>;
}

export interface ServiceDatabase {
  pool: Pool;
  relay: OutboxRelay;
  /** Up or down, logged once per change; the service's gRPC health follows it. */
  health: DbHealth;
  /** True while the database has every migration this code knows (cached 1 s): part of the gRPC health. */
  migrationsApplied(): Promise<boolean>;
  close(): Promise<void>;
}

/** Migrations get a pool of their own, without the request timeouts: a long migration may run for minutes. */
async function migrateDatabase(url: string, own: Migration[]): Promise<string[]> {
  const pool = createPool(url, 1);
  try {
    return await migrate(pool, [...OUTBOX_MIGRATIONS, ...own]);
  } finally {
    await pool.end();
  }
}

const START_RETRY_MAX_MS = 10_000;

/**
 * A service that starts while PostgreSQL is down waits for it (one log line, then one when it is
 * back) instead of exiting; any other failure (a broken migration, bad credentials) still stops it.
 */
async function untilDatabaseAnswers<T>(service: string, logger: Logger, step: () => Promise<T>): Promise<T> {
  for (let delay = 250, warned = false; ; delay = Math.min(START_RETRY_MAX_MS, delay * 2)) {
    try {
      const result = await step();
      if (warned) logger.info({ service, dependency: 'postgres', state: 'up' }, 'database reachable; starting');
      return result;
    } catch (err) {
      if (!isDependencyUnavailable(err)) throw err;
      if (!warned)
        logger.warn({ service, dependency: 'postgres', state: 'down', err }, 'database unreachable at start; waiting');
      warned = true;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

const MIGRATION_WAIT_MS = 2000;
const MIGRATION_CHECK_CACHE_MS = 1000;

/**
 * Creates the service's own database if needed and applies its pending migrations (the outbox's
 * included), waiting for PostgreSQL if it is down; `platform --migrate` and, by default, each
 * service at start. Answers the ids applied.
 */
export async function migrateServiceDatabase(service: string, rt: Runtime, migrations: Migration[]): Promise<string[]> {
  if (!rt.config.databaseUrl) throw new Error('DATABASE_URL is not set');
  const url = serviceDatabaseUrl(service, rt.config.databaseUrl, rt.config.env);
  const applied = await untilDatabaseAnswers(service, rt.logger, async () => {
    await ensureDatabase(url);
    return migrateDatabase(url, migrations);
  });
  if (applied.length) rt.logger.info({ service, applied }, 'migrations applied');
  return applied;
}

/** MIGRATE_ON_START=false: waits (one log line) until another process has applied every migration. */
async function untilMigrated(service: string, rt: Runtime, url: string, migrations: Migration[]): Promise<void> {
  const pool = createPool(url, 1);
  try {
    for (let warned = false; ; ) {
      const pending = await untilDatabaseAnswers(service, rt.logger, () =>
        pendingMigrations(pool, migrations).catch((err) => {
          // invalid_catalog_name: the migration job has not created the database yet.
          if ((err as { code?: string }).code === '3D000') return migrations.map((m) => m.id);
          throw err;
        }),
      );
      if (!pending.length) {
        if (warned) rt.logger.info({ service }, 'migrations applied by the migration job; starting');
        return;
      }
      if (!warned) rt.logger.warn({ service, pending }, 'waiting for migrations (MIGRATE_ON_START=false)');
      warned = true;
      await new Promise((r) => setTimeout(r, MIGRATION_WAIT_MS));
    }
  } finally {
    await pool.end();
  }
}

/** Ports opened by openServiceDatabase before migrating, for serveRpc to take over (one per service name). */
const startingPorts = new Map<string, StartingPort>();

/**
 * Migrates the service's own database (or, with MIGRATE_ON_START=false, waits until it is migrated),
 * then starts its outbox relay. In distributed mode the service's RPC port opens first, answering
 * health checks only (alive, not ready: openStartingPort), so a long migration, or a replica waiting
 * for another's lock, is never taken for a hung process by the startup and liveness probes.
 */
export async function openServiceDatabase(
  service: string,
  rt: Runtime,
  own: Migration[],
  opts: { relayPlanSettings?: string } = {},
): Promise<ServiceDatabase> {
  if (!rt.config.databaseUrl) throw new Error('DATABASE_URL is not set');
  const url = serviceDatabaseUrl(service, rt.config.databaseUrl, rt.config.env);
  const migrations = [...OUTBOX_MIGRATIONS, ...own];
  const port = rt.config.rpcPorts[service];
  if (!rt.embedded && port !== undefined && !startingPorts.has(service)) {
    const opened = await openStartingPort({ name: service, host: rt.config.bindHost, port, logger: rt.logger });
    startingPorts.set(service, opened);
  }
  try {
    if (rt.config.migrateOnStart) await migrateServiceDatabase(service, rt, own);
    else await untilMigrated(service, rt, url, migrations);
  } catch (err) {
    await startingPorts.get(service)?.close();
    startingPorts.delete(service);
    throw err;
  }
  const pool = createPool(url, 10, rt.config.db);
  const health = new DbHealth(pool, rt.logger.child({ service }));
  pool.on('error', (err) => health.report(err));
  const relay = new OutboxRelay({
    service,
    pool,
    bus: rt.bus,
    health,
    logger: rt.logger.child({ service, part: 'outbox' }),
    // Published rows are kept only for a bus that can lose a stream and have them sent again (refillLostStreams).
    keepPublished: rt.bus.onStreamRecreated !== undefined,
    planSettings: opts.relayPlanSettings,
  });
  await relay.start();
  refillLostStreams(rt.bus, pool, relay, rt.logger.child({ service, part: 'outbox' }));
  const unwatch = watchOutbox(service, pool);
  let migrationsChecked: { at: number; ok: Promise<boolean> } | undefined;
  return {
    pool,
    relay,
    health,
    migrationsApplied() {
      if (!migrationsChecked || Date.now() - migrationsChecked.at >= MIGRATION_CHECK_CACHE_MS) {
        const ok = pendingMigrations(pool, migrations).then((pending) => pending.length === 0);
        migrationsChecked = { at: Date.now(), ok: ok.catch(() => false) };
      }
      return migrationsChecked.ok;
    },
    async close() {
      unwatch();
      await relay.stop();
      health.close();
      await pool.end();
    },
  };
}

function takeStartingPort(name: string): StartingPort | undefined {
  const port = startingPorts.get(name);
  startingPorts.delete(name);
  return port;
}

/**
 * Serves a service's RPCs on its configured port, behind the service token. Embedded mode
 * keeps them on loopback whatever BIND_HOST says: only the gateway is meant to be reached.
 * With `db`, a database outage answers 503 without a log line per call, and the gRPC health
 * check follows the database.
 */
export function serveRpc(
  rt: Runtime,
  name: string,
  routes: (router: ConnectRouter) => void,
  db?: ServiceDatabase,
): Promise<RpcServer> {
  return startRpcServer({
    name,
    host: rt.embedded ? '127.0.0.1' : rt.config.bindHost,
    port: rt.config.rpcPorts[name],
    routes,
    logger: rt.logger,
    shutdownTimeoutMs: rt.config.shutdownTimeoutMs,
    serviceToken: rt.config.serviceToken,
    health: db?.health,
    migrations: db?.migrationsApplied,
    inProcess: rt.embedded,
    starting: takeStartingPort(name),
  });
}
