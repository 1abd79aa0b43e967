import { z } from 'zod';
import { envBool, envDnsServers, envPositiveInt } from '@svc/lib/config';

/** The workflows service's own environment variables (the platform-wide ones are in lib/src/config.ts). */
export const workflowsEnv = z
  .object({
    /** `true` lets WEBHOOK steps call private, loopback and link-local addresses (refused by default). */
    WEBHOOK_ALLOW_PRIVATE: envBool.default('false'),
    WEBHOOK_TIMEOUT_MS: envPositiveInt.default(10000),
    /** Attempts of one WEBHOOK call before the step fails (a 2xx answer ends them). */
    WEBHOOK_MAX_ATTEMPTS: envPositiveInt.default(3),
    /** Wait before the second attempt; doubles per attempt. */
    WEBHOOK_RETRY_BASE_MS: envPositiveInt.default(500),
    /** Resolvers for WEBHOOK hosts (as for messaging's domain checks); default: the system's. */
    DNS_SERVERS: envDnsServers,
    /** Fallback poll of the execution worker (due DELAY timers and WAIT_FOR_EVENT timeouts). */
    WORKFLOW_POLL_MS: envPositiveInt.default(500),
    /** How long a claimed execution stays with its worker; a worker that dies leaves it due again after this. */
    WORKFLOW_LEASE_MS: envPositiveInt.default(120000),
  })
  .transform((e) => ({
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    webhookMaxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
    webhookRetryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
    dnsServers: e.DNS_SERVERS,
    workflowPollMs: e.WORKFLOW_POLL_MS,
    workflowLeaseMs: e.WORKFLOW_LEASE_MS,
  }));

export type WorkflowsEnv = z.output<typeof workflowsEnv>;
