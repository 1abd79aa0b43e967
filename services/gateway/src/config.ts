import { z } from 'zod';
import { envPositiveInt, type Config } from '@svc/lib/config';
import { parseTrustProxy } from '@svc/lib/trust-proxy';

/** The gateway's own environment variables (the platform-wide ones are in lib/src/config.ts). */
export const gatewayEnv = z
  .object({
    /** Per-project budgets of the route families: management API, /v1/track, /v1/send. */
    RATE_LIMIT_PER_MINUTE: envPositiveInt.default(1000),
    RATE_LIMIT_TRACK_PER_MINUTE: envPositiveInt.optional(),
    RATE_LIMIT_SEND_PER_MINUTE: envPositiveInt.optional(),
    KEY_CACHE_TTL_SECONDS: z.coerce.number().int().min(0).default(5),
    /** README "Login throttle": failed sign-ins per client, and per account, per LOGIN_FAILURE_WINDOW_SECONDS. */
    LOGIN_FAILURES_PER_CLIENT: envPositiveInt.default(20),
    LOGIN_FAILURES_PER_ACCOUNT: envPositiveInt.default(50),
    LOGIN_FAILURE_WINDOW_SECONDS: envPositiveInt.default(900),
    /** Accounts created (POST /auth/signup) per client per hour. */
    SIGNUPS_PER_HOUR: envPositiveInt.default(10),
    /**
     * Concurrent /v1/track requests share one TrackEvents RPC: the first waits this long (ms) for
     * others, a batch of TRACK_BATCH_MAX goes at once; 0 sends one TrackEvent per request.
     */
    TRACK_BATCH_WINDOW_MS: z.coerce.number().min(0).max(100).default(1),
    TRACK_BATCH_MAX: z.coerce.number().int().min(1).max(1000).default(100),
    /** The same for /v1/send and SendEmails (requests with attachments always go alone); 0: one SendEmail each. */
    SEND_BATCH_WINDOW_MS: z.coerce.number().min(0).max(100).default(1),
    SEND_BATCH_MAX: z.coerce.number().int().min(1).max(100).default(100),
    SESSION_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
    BODY_LIMIT: z
      .string()
      .regex(/^\d+(b|kb|mb)$/i, 'expected e.g. 1mb')
      .default('1mb'),
    /** Shared secret of provider webhooks (`X-Webhook-Secret`); unset: webhooks are refused. */
    WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
    /** Stripe, the payment provider of the billing routes (README "Billing"); unset: those answer 501. */
    STRIPE_SECRET_KEY: z.string().min(1).optional(),
    STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
    STRIPE_PRICE_ID: z.string().min(1).optional(),
    /** Strict-Transport-Security max-age (seconds) on answers over HTTPS (http/security-headers.ts); 0: none. */
    HSTS_MAX_AGE: z.coerce.number().int().min(0).default(31536000),
    /** Express `trust proxy` value: which proxies' X-Forwarded-For to believe; unset trusts none. */
    TRUST_PROXY: z
      .string()
      .refine(
        (v) => parseTrustProxy(v) !== null,
        'expected a hop count or a comma list of addresses, CIDRs, loopback...',
      )
      .optional(),
  })
  .transform((e) => ({
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    trackRateLimitPerMinute: e.RATE_LIMIT_TRACK_PER_MINUTE ?? e.RATE_LIMIT_PER_MINUTE,
    sendRateLimitPerMinute: e.RATE_LIMIT_SEND_PER_MINUTE ?? e.RATE_LIMIT_PER_MINUTE,
    keyCacheTtlSeconds: e.KEY_CACHE_TTL_SECONDS,
    login: {
      failuresPerClient: e.LOGIN_FAILURES_PER_CLIENT,
      failuresPerAccount: e.LOGIN_FAILURES_PER_ACCOUNT,
      windowMs: e.LOGIN_FAILURE_WINDOW_SECONDS * 1000,
    },
    signupsPerHour: e.SIGNUPS_PER_HOUR,
    trackBatch: { windowMs: e.TRACK_BATCH_WINDOW_MS, maxBatch: e.TRACK_BATCH_MAX },
    sendBatch: { windowMs: e.SEND_BATCH_WINDOW_MS, maxBatch: e.SEND_BATCH_MAX },
    sessionSecret: e.SESSION_SECRET,
    bodyLimit: e.BODY_LIMIT,
    webhookSecret: e.WEBHOOK_SECRET,
    trustProxy: e.TRUST_PROXY,
    hstsMaxAge: e.HSTS_MAX_AGE,
    stripe: { secretKey: e.STRIPE_SECRET_KEY, webhookSecret: e.STRIPE_WEBHOOK_SECRET, priceId: e.STRIPE_PRICE_ID },
  }));

export type GatewayEnv = z.output<typeof gatewayEnv>;

/**
 * Distributed mode (DATABASE_URL set) needs SESSION_SECRET: with a random secret per process, a session one
 * gateway replica signed is refused by the others. Embedded mode keeps a generated one in DATA_DIR.
 */
export function sessionSecretProblem(sessionSecret: string | undefined, embedded: boolean): string | undefined {
  if (embedded || sessionSecret) return undefined;
  return (
    'SESSION_SECRET is required when DATABASE_URL is set (it signs session cookies, and every gateway replica ' +
    'must use the same one): set it to at least 16 random characters, e.g. `openssl rand -hex 32`'
  );
}
/** What the gateway's code reads: the platform-wide config and its own. */
export type GatewayConfig = Config & GatewayEnv;
