import type { Logger } from '@svc/lib/logger';
import type { SendRecords } from '../domain/send-records.js';

const INTERVAL_MS = 60_000;

/** Removes /v1/send Idempotency-Key records older than IDEMPOTENCY_TTL_SECONDS, once a minute. */
export function startSendRecordsCleanup(records: SendRecords, logger: Logger): { stop(): void } {
  const timer = setInterval(() => {
    records.deleteExpired().catch((err) => logger.warn({ err }, 'expired Idempotency-Key records not removed'));
  }, INTERVAL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
