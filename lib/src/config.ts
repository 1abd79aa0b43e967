import { z } from 'zod';

/**
 * Platform-wide environment: what lib itself reads (database, bus, Redis, logging, timeouts,
 * credentials) and the variables more than one service reads. A variable only one service
 * reads lives in that service's `src/config.ts`, validated when the service runs in the process.
 */

/** zod pieces for environment variables, shared by the services' own config fragments. */
export const envBool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
export const envPort = z.coerce.number().int().min(0).max(65535);
export const envPositiveInt = z.coerce.number().int().positive();
export const envUrl = z.string().url();
/** `host[:port]` resolvers, comma-separated (DNS_SERVERS); empty: the system's. */
export const envDnsServers = z
  .string()
  .regex(/^\s*[^,\s]+(\s*,\s*[^,\s]+)*\s*$/, 'expected a comma-separated host:port list')
  .optional()
  .transform((v) => (v ? v.split(',').map((s) => s.trim()) : []));

/** The gateway's HTTP port (`PORT`); also the default of PUBLIC_URL. */
export const DEFAULT_PORT = 8080;

/** What the config needs of each registered service: its RPC port (`<NAME>_PORT`) and address (`<NAME>_URL`). */
export interface ServicePort {
  name: string;
  defaultPort: number;
  /** The HTTP edge (the gateway) listens on `PORT` and has no `<NAME>_PORT`/`<NAME>_URL`. */
  edge?: boolean;
}

const schema = z.object({
  // PUBLIC_URL (gateway cookies, messaging links) defaults from PORT, so both are platform-wide.
  PORT: envPort.default(DEFAULT_PORT),
  PUBLIC_URL: envUrl.optional(),
  BIND_HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: envUrl.optional(),
  NATS_URL: z.string().min(1).optional(),
  REDIS_URL: envUrl.optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // auto: human-readable lines when stdout is a terminal, JSON otherwise.
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  // Read by the gateway (Idempotency-Key) and messaging (send records).
  IDEMPOTENCY_TTL_SECONDS: envPositiveInt.default(86400),
  // Read by identity (refuses signups) and the gateway (GET /config).
  SIGNUP_DISABLED: envBool.default('false'),
  BUS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only')
    .default('svc'),
  DATA_DIR: z.string().min(1).default('.data'),
  EMBEDDED_PG_PORT: envPort.default(54329),
  SHUTDOWN_TIMEOUT_MS: envPositiveInt.default(10000),
  // After SIGTERM: how long to keep serving while reporting NOT_SERVING (load balancers let go), before closing.
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).default(0),
  // false: a service does not migrate its database at start, it waits until another process did (a migration Job).
  MIGRATE_ON_START: envBool.default('true'),
  DB_CONNECT_TIMEOUT_MS: envPositiveInt.default(5000),
  DB_STATEMENT_TIMEOUT_MS: envPositiveInt.default(15000),
  DB_QUERY_TIMEOUT_MS: envPositiveInt.default(20000),
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: envPositiveInt.default(30000),
  RPC_TIMEOUT_MS: envPositiveInt.default(30000),
  REDIS_COMMAND_TIMEOUT_MS: envPositiveInt.default(500),
  SERVICE_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  // Prometheus metrics: GET /metrics on the gateway, and on METRICS_PORT (any process) when set.
  METRICS_ENABLED: envBool.default('true'),
  METRICS_PORT: envPort.optional(),
});

type Env = z.infer<typeof schema>;

export interface Config {
  port: number;
  bindHost: string;
  publicUrl: string;
  databaseUrl?: string;
  natsUrl?: string;
  redisUrl?: string;
  logLevel: Env['LOG_LEVEL'];
  logFormat: Env['LOG_FORMAT'];
  idempotencyTtlSeconds: number;
  signupDisabled: boolean;
  busPrefix: string;
  dataDir: string;
  embeddedPgPort: number;
  shutdownTimeoutMs: number;
  /** After SIGTERM, how long the process keeps serving while it reports NOT_SERVING (0: closes at once). */
  shutdownDrainMs: number;
  /** false: services wait for their migrations (applied by `platform --migrate`) instead of applying them. */
  migrateOnStart: boolean;
  /** Each registered RPC service's port (`<NAME>_PORT`) and address (`<NAME>_URL`, default loopback). */
  rpcPorts: Record<string, number>;
  rpcUrls: Record<string, string>;
  /** Pool timeouts: connecting, server-side statement limit, client-side wait for an answer, idle in a transaction. */
  db: {
    connectTimeoutMs: number;
    statementTimeoutMs: number;
    queryTimeoutMs: number;
    idleInTransactionTimeoutMs: number;
  };
  /** Deadline of a call from the gateway (or another service) to a service. */
  rpcTimeoutMs: number;
  /** A Redis command that takes longer fails (and the caller degrades) instead of waiting. */
  redisCommandTimeoutMs: number;
  /** Shared secret services require of their callers (bearer token); required in distributed mode. */
  serviceToken?: string;
  /** GET /metrics on the gateway and METRICS_PORT; false turns both off. */
  metricsEnabled: boolean;
  /** A plain HTTP listener for GET /metrics in this process (for processes without the gateway). */
  metricsPort?: number;
  /** Raw environment, for per-service overrides such as DATABASE_URL_CONTACTS. */
  env: Record<string, string | undefined>;
}

export class ConfigError extends Error {}

/**
 * Validates `env` against one schema (the platform's or a service's fragment); empty strings
 * count as unset. The message names the first bad variable in one line.
 */
export function parseEnv<T>(fragment: z.ZodType<T, z.ZodTypeDef, unknown>, env: Record<string, string | undefined>): T {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = fragment.safeParse(cleaned);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new ConfigError(`invalid environment variable ${issue.path.join('.')}: ${issue.message}`);
  }
  return result.data;
}

/** `<NAME>_PORT`: where an RPC service listens. */
export const portVariable = (s: Pick<ServicePort, 'name'>) => `${s.name.toUpperCase()}_PORT`;
const urlVariable = (s: ServicePort) => `${s.name.toUpperCase()}_URL`;

/** The `<NAME>_PORT` and `<NAME>_URL` variables of the registered RPC services. */
function addressSchema(services: readonly ServicePort[]) {
  const shape: Record<string, z.ZodTypeAny> = {};
  for (const s of services.filter((x) => !x.edge)) {
    shape[portVariable(s)] = envPort.default(s.defaultPort);
    shape[urlVariable(s)] = envUrl.optional();
  }
  return z.object(shape);
}

/** The platform-wide config; `services` (the registry) gives the RPC ports and addresses. */
export function parseConfig(env: Record<string, string | undefined>, services: readonly ServicePort[] = []): Config {
  const e = parseEnv(schema, env);
  const addresses = parseEnv(addressSchema(services), env) as Record<string, number | string | undefined>;
  const rpcPorts: Record<string, number> = {};
  const rpcUrls: Record<string, string> = {};
  for (const s of services.filter((x) => !x.edge)) {
    rpcPorts[s.name] = addresses[portVariable(s)] as number;
    rpcUrls[s.name] = (addresses[urlVariable(s)] as string | undefined) ?? `http://127.0.0.1:${rpcPorts[s.name]}`;
  }
  return {
    port: e.PORT,
    bindHost: e.BIND_HOST,
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    databaseUrl: e.DATABASE_URL,
    natsUrl: e.NATS_URL,
    redisUrl: e.REDIS_URL,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
    signupDisabled: e.SIGNUP_DISABLED,
    busPrefix: e.BUS_PREFIX,
    dataDir: e.DATA_DIR,
    embeddedPgPort: e.EMBEDDED_PG_PORT,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    migrateOnStart: e.MIGRATE_ON_START,
    rpcPorts,
    rpcUrls,
    db: {
      connectTimeoutMs: e.DB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
      queryTimeoutMs: e.DB_QUERY_TIMEOUT_MS,
      idleInTransactionTimeoutMs: e.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    },
    rpcTimeoutMs: e.RPC_TIMEOUT_MS,
    redisCommandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    serviceToken: e.SERVICE_TOKEN,
    metricsEnabled: e.METRICS_ENABLED,
    metricsPort: e.METRICS_PORT,
    env,
  };
}

/** Process entry points read config through this: a bad value stops the process with one clear line. */
export function orExitOnConfigError<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`config error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

export function loadConfig(env: Record<string, string | undefined>, services: readonly ServicePort[]): Config {
  return orExitOnConfigError(() => parseConfig(env, services));
}
