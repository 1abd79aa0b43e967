import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { envDnsServers, envPort, envPositiveInt, envUrl, type Config } from '@svc/lib/config';
import { normalDomain } from './domain/link-safety.js';

/** TRACKING_BLOCKED_DOMAINS: a comma list of domains, each one a hostname (`*.` or a leading dot is allowed). */
const envDomainList = z
  .string()
  .default('')
  .transform((v, ctx) => {
    const items = v
      .split(',')
      .map((d) => d.trim())
      .filter(Boolean);
    const domains = items.map(normalDomain);
    const bad = items.filter((_, i) => !domains[i]);
    if (bad.length) ctx.addIssue({ code: 'custom', message: `Not a domain: ${bad.join(', ')}` });
    return domains;
  });

/**
 * One signing thread per CPU, each at a lower scheduling priority (DKIM_THREAD_NICE): signing is background work, so
 * it takes every core the request paths leave idle and none they need. On this project's 2-CPU bench box one thread at
 * the process's priority capped a campaign at about 1,450 messages a second (bench/campaign.ts: 65-70 s for 100,000),
 * and a second one at that priority took CPU from tracking (bench/workflow.ts -10%); two niced threads sent it in
 * 62 s with the workflow and /v1/send rates unchanged (bench/README.md, 2026-11-25).
 */
export const DKIM_THREADS = Math.max(1, availableParallelism());
/** The signing threads' nice increment (Linux only, where nice is per thread; 0: the process's priority). */
export const DKIM_THREAD_NICE = 10;

/** The messaging service's own environment variables (the platform-wide ones are in lib/src/config.ts). */
export const messagingEnv = z
  .object({
    /** SMTP relay of outgoing mail; unset: a local sink on EMBEDDED_SMTP_PORT. */
    SMTP_URL: envUrl.optional(),
    SMTP_POOL_SIZE: envPositiveInt.default(5),
    /** Worker threads that build and DKIM-sign outgoing mail; 0 signs on the main thread. Default: DKIM_THREADS. */
    DKIM_WORKERS: z.coerce.number().int().min(0).max(64).default(DKIM_THREADS),
    /** How much lower than the process the signing threads run (a nice increment, 0-19); 0: the same priority. */
    DKIM_THREAD_NICE: z.coerce.number().int().min(0).max(19).default(DKIM_THREAD_NICE),
    EMBEDDED_SMTP_PORT: envPort.default(2525),
    /** SMTP listener of inbound mail (README "Inbound mail"); unset: off, except embedded mode (2526). */
    INBOUND_SMTP_PORT: envPort.optional(),
    /** Per-project delivery throttle, messages per second. */
    SEND_RATE_PER_SECOND: envPositiveInt.default(100),
    SEND_MAX_ATTEMPTS: envPositiveInt.default(6),
    /** First retry delay after a temporary (4xx) SMTP failure; doubles per attempt. */
    SEND_RETRY_BASE_MS: envPositiveInt.default(30000),
    DOMAIN_CHECK_INTERVAL_SECONDS: envPositiveInt.default(300),
    /** Sends in the judged 7-day window below which bounce and complaint rates suspend nothing. */
    REPUTATION_MIN_VOLUME: envPositiveInt.default(100),
    /** How long a project's suspension state is cached on the send path (bus messages drop it sooner). */
    SUSPENSION_CACHE_SECONDS: z.coerce.number().int().min(0).default(30),
    DNS_SERVERS: envDnsServers,
    /** A repeated open of an email within this many seconds is answered but not recorded (0: every one is). */
    TRACKING_OPEN_WINDOW_SECONDS: z.coerce.number().int().min(0).default(60),
    /** The same for a click of one link of an email. */
    TRACKING_CLICK_WINDOW_SECONDS: z.coerce.number().int().min(0).default(60),
    /** Opens and clicks are recorded only this many days after the email was queued (0: no limit). */
    TRACKING_RECORD_DAYS: z.coerce.number().int().min(0).max(36500).default(365),
    /** Recorded opens and clicks per client address per minute across all emails (0: no budget). */
    TRACKING_RECORDS_PER_CLIENT_PER_MINUTE: z.coerce.number().int().min(0).default(0),
    /** Opens and clicks of scanners and bots (user agent, a burst of links) are answered, not recorded. */
    TRACKING_DETECT_AUTOMATED: z.enum(['true', 'false']).default('true'),
    /** Tracked links to these domains (and their subdomains) show a warning page instead of redirecting. */
    TRACKING_BLOCKED_DOMAINS: envDomainList,
    /** S3-compatible bucket of uploaded images (README "Image uploads"); unset S3_BUCKET: the database. */
    S3_ENDPOINT: envUrl.optional(),
    S3_BUCKET: z.string().min(1).optional(),
    S3_REGION: z.string().min(1).default('us-east-1'),
    S3_ACCESS_KEY_ID: z.string().min(1).optional(),
    S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
    S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).default('false'),
  })
  .refine((e) => !e.S3_BUCKET || (e.S3_ACCESS_KEY_ID && e.S3_SECRET_ACCESS_KEY), {
    message: 'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are required with S3_BUCKET',
    path: ['S3_BUCKET'],
  })
  .transform((e) => ({
    smtpUrl: e.SMTP_URL,
    smtpPoolSize: e.SMTP_POOL_SIZE,
    dkimWorkers: e.DKIM_WORKERS,
    dkimThreadNice: e.DKIM_THREAD_NICE,
    embeddedSmtpPort: e.EMBEDDED_SMTP_PORT,
    inboundSmtpPort: e.INBOUND_SMTP_PORT,
    sendRatePerSecond: e.SEND_RATE_PER_SECOND,
    sendMaxAttempts: e.SEND_MAX_ATTEMPTS,
    sendRetryBaseMs: e.SEND_RETRY_BASE_MS,
    domainCheckIntervalSeconds: e.DOMAIN_CHECK_INTERVAL_SECONDS,
    reputationMinVolume: e.REPUTATION_MIN_VOLUME,
    suspensionCacheSeconds: e.SUSPENSION_CACHE_SECONDS,
    dnsServers: e.DNS_SERVERS,
    trackingHits: {
      recordForMs: e.TRACKING_RECORD_DAYS * 86_400_000,
      openWindowMs: e.TRACKING_OPEN_WINDOW_SECONDS * 1000,
      clickWindowMs: e.TRACKING_CLICK_WINDOW_SECONDS * 1000,
      perClientPerMinute: e.TRACKING_RECORDS_PER_CLIENT_PER_MINUTE,
    },
    trackingDetectAutomated: e.TRACKING_DETECT_AUTOMATED === 'true',
    trackingBlockedDomains: e.TRACKING_BLOCKED_DOMAINS,
    s3: e.S3_BUCKET
      ? {
          endpoint: e.S3_ENDPOINT,
          bucket: e.S3_BUCKET,
          region: e.S3_REGION,
          accessKeyId: e.S3_ACCESS_KEY_ID!,
          secretAccessKey: e.S3_SECRET_ACCESS_KEY!,
          forcePathStyle: e.S3_FORCE_PATH_STYLE === 'true',
        }
      : undefined,
  }));

export type MessagingEnv = z.output<typeof messagingEnv>;
/** What the messaging service's code reads: the platform-wide config and its own. */
export type MessagingConfig = Config & MessagingEnv;
