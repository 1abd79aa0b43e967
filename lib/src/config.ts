import { z } from 'zod';
import { parseTrustProxy } from './trust-proxy.js';

/** The services of the platform, in start order (the gateway last: it calls the others). */
export const SERVICES = ['identity', 'contacts', 'messaging', 'campaigns', 'segments', 'workflows', 'gateway'] as const;
export type ServiceName = (typeof SERVICES)[number];
export type RpcServiceName = Exclude<ServiceName, 'gateway'>;

const DEFAULT_RPC_PORTS: Record<RpcServiceName, number> = {
  identity: 50051,
  contacts: 50052,
  messaging: 50053,
  campaigns: 50054,
  segments: 50055,
  workflows: 50056,
};

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const url = z.string().url();

const schema = z.object({
  PORT: port.default(8080),
  BIND_HOST: z.string().min(1).default('0.0.0.0'),
  PUBLIC_URL: url.optional(),
  DATABASE_URL: url.optional(),
  NATS_URL: z.string().min(1).optional(),
  REDIS_URL: url.optional(),
  SMTP_URL: url.optional(),
  DNS_SERVERS: z
    .string()
    .regex(/^\s*[^,\s]+(\s*,\s*[^,\s]+)*\s*$/, 'expected a comma-separated host:port list')
    .optional(),
  SESSION_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RATE_LIMIT_PER_MINUTE: positiveInt.default(1000),
  IDEMPOTENCY_TTL_SECONDS: positiveInt.default(86400),
  KEY_CACHE_TTL_SECONDS: z.coerce.number().int().min(0).default(5),
  SIGNUP_DISABLED: bool.default('false'),
  BUS_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only').default('svc'),
  DATA_DIR: z.string().min(1).default('.data'),
  EMBEDDED_PG_PORT: port.default(54329),
  BODY_LIMIT: z.string().regex(/^\d+(b|kb|mb)$/i, 'expected e.g. 1mb').default('1mb'),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(10000),
  IDENTITY_PORT: port.default(DEFAULT_RPC_PORTS.identity),
  CONTACTS_PORT: port.default(DEFAULT_RPC_PORTS.contacts),
  MESSAGING_PORT: port.default(DEFAULT_RPC_PORTS.messaging),
  CAMPAIGNS_PORT: port.default(DEFAULT_RPC_PORTS.campaigns),
  SEGMENTS_PORT: port.default(DEFAULT_RPC_PORTS.segments),
  WORKFLOWS_PORT: port.default(DEFAULT_RPC_PORTS.workflows),
  IDENTITY_URL: url.optional(),
  CONTACTS_URL: url.optional(),
  MESSAGING_URL: url.optional(),
  CAMPAIGNS_URL: url.optional(),
  SEGMENTS_URL: url.optional(),
  WORKFLOWS_URL: url.optional(),
  WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  SEND_RATE_PER_SECOND: positiveInt.default(100),
  SEND_MAX_ATTEMPTS: positiveInt.default(6),
  SEND_RETRY_BASE_MS: positiveInt.default(30000),
  SMTP_POOL_SIZE: positiveInt.default(5),
  EMBEDDED_SMTP_PORT: port.default(2525),
  DOMAIN_CHECK_INTERVAL_SECONDS: positiveInt.default(300),
  DB_CONNECT_TIMEOUT_MS: positiveInt.default(5000),
  DB_STATEMENT_TIMEOUT_MS: positiveInt.default(15000),
  DB_QUERY_TIMEOUT_MS: positiveInt.default(20000),
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: positiveInt.default(30000),
  RPC_TIMEOUT_MS: positiveInt.default(30000),
  REDIS_COMMAND_TIMEOUT_MS: positiveInt.default(500),
  SERVICE_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  TRUST_PROXY: z
    .string()
    .refine((v) => parseTrustProxy(v) !== null, 'expected a hop count or a comma list of addresses, CIDRs, loopback...')
    .optional(),
});

type Env = z.infer<typeof schema>;

export interface Config {
  port: number;
  bindHost: string;
  publicUrl: string;
  databaseUrl?: string;
  natsUrl?: string;
  redisUrl?: string;
  smtpUrl?: string;
  dnsServers: string[];
  sessionSecret?: string;
  logLevel: Env['LOG_LEVEL'];
  rateLimitPerMinute: number;
  idempotencyTtlSeconds: number;
  keyCacheTtlSeconds: number;
  signupDisabled: boolean;
  busPrefix: string;
  dataDir: string;
  embeddedPgPort: number;
  bodyLimit: string;
  shutdownTimeoutMs: number;
  rpcPorts: Record<RpcServiceName, number>;
  rpcUrls: Record<RpcServiceName, string>;
  /** Shared secret of provider webhooks (`X-Webhook-Secret`); unset: webhooks are refused. */
  webhookSecret?: string;
  /** Per-project delivery throttle, messages per second. */
  sendRatePerSecond: number;
  sendMaxAttempts: number;
  /** First retry delay after a temporary (4xx) SMTP failure; doubles per attempt. */
  sendRetryBaseMs: number;
  smtpPoolSize: number;
  /** Embedded mode's local SMTP sink port (used when SMTP_URL is unset). */
  embeddedSmtpPort: number;
  domainCheckIntervalSeconds: number;
  /** Pool timeouts: connecting, server-side statement limit, client-side wait for an answer, idle in a transaction. */
  db: { connectTimeoutMs: number; statementTimeoutMs: number; queryTimeoutMs: number; idleInTransactionTimeoutMs: number };
  /** Deadline of a call from the gateway (or another service) to a service. */
  rpcTimeoutMs: number;
  /** A Redis command that takes longer fails (and the caller degrades) instead of waiting. */
  redisCommandTimeoutMs: number;
  /** Shared secret services require of their callers (bearer token); required in distributed mode. */
  serviceToken?: string;
  /** Express `trust proxy` value: which proxies' X-Forwarded-For to believe; unset trusts none. */
  trustProxy?: string;
  /** Raw environment, for per-service overrides such as DATABASE_URL_CONTACTS. */
  env: Record<string, string | undefined>;
}

export class ConfigError extends Error {}

/** Validates the environment; the message names the first bad variable in one line. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    const issue = result.error.issues[0];
    const name = issue.path.join('.');
    throw new ConfigError(`invalid environment variable ${name}: ${issue.message}`);
  }
  const e = result.data;
  const rpcPorts: Record<RpcServiceName, number> = {
    identity: e.IDENTITY_PORT,
    contacts: e.CONTACTS_PORT,
    messaging: e.MESSAGING_PORT,
    campaigns: e.CAMPAIGNS_PORT,
    segments: e.SEGMENTS_PORT,
    workflows: e.WORKFLOWS_PORT,
  };
  const urlOf = (s: RpcServiceName, v?: string) => v ?? `http://127.0.0.1:${rpcPorts[s]}`;
  return {
    port: e.PORT,
    bindHost: e.BIND_HOST,
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
    databaseUrl: e.DATABASE_URL,
    natsUrl: e.NATS_URL,
    redisUrl: e.REDIS_URL,
    smtpUrl: e.SMTP_URL,
    dnsServers: e.DNS_SERVERS ? e.DNS_SERVERS.split(',').map((s) => s.trim()) : [],
    sessionSecret: e.SESSION_SECRET,
    logLevel: e.LOG_LEVEL,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
    keyCacheTtlSeconds: e.KEY_CACHE_TTL_SECONDS,
    signupDisabled: e.SIGNUP_DISABLED,
    busPrefix: e.BUS_PREFIX,
    dataDir: e.DATA_DIR,
    embeddedPgPort: e.EMBEDDED_PG_PORT,
    bodyLimit: e.BODY_LIMIT,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    rpcPorts,
    rpcUrls: {
      identity: urlOf('identity', e.IDENTITY_URL),
      contacts: urlOf('contacts', e.CONTACTS_URL),
      messaging: urlOf('messaging', e.MESSAGING_URL),
      campaigns: urlOf('campaigns', e.CAMPAIGNS_URL),
      segments: urlOf('segments', e.SEGMENTS_URL),
      workflows: urlOf('workflows', e.WORKFLOWS_URL),
    },
    webhookSecret: e.WEBHOOK_SECRET,
    sendRatePerSecond: e.SEND_RATE_PER_SECOND,
    sendMaxAttempts: e.SEND_MAX_ATTEMPTS,
    sendRetryBaseMs: e.SEND_RETRY_BASE_MS,
    smtpPoolSize: e.SMTP_POOL_SIZE,
    embeddedSmtpPort: e.EMBEDDED_SMTP_PORT,
    domainCheckIntervalSeconds: e.DOMAIN_CHECK_INTERVAL_SECONDS,
    db: {
      connectTimeoutMs: e.DB_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
      queryTimeoutMs: e.DB_QUERY_TIMEOUT_MS,
      idleInTransactionTimeoutMs: e.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    },
    rpcTimeoutMs: e.RPC_TIMEOUT_MS,
    redisCommandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    serviceToken: e.SERVICE_TOKEN,
    trustProxy: e.TRUST_PROXY,
    env,
  };
}

/** Process entry points call this: a bad value stops the process with one clear line. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  try {
    return parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`config error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
