// What an SMTP answer means for a message: 2xx sent, 4xx (and connection trouble) try again
// later with exponential backoff, 5xx a permanent failure recorded as a bounce.

export type FailureOutcome =
  | { kind: 'retry'; delayMs: number; reason: string }
  | { kind: 'bounce'; reason: string }
  | { kind: 'failed'; reason: string };

export interface SmtpFailure {
  responseCode?: number;
  response?: string;
  code?: string;
  message?: string;
}

const MAX_DELAY_MS = 3600_000;
const MAX_REASON = 500;

export function retryDelay(attempt: number, baseMs: number, random = Math.random): number {
  const exp = Math.min(MAX_DELAY_MS, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exp * (0.9 + random() * 0.2)); // jitter keeps retries of one outage apart
}

export function classifyFailure(
  err: SmtpFailure,
  attempt: number,
  opts: { maxAttempts: number; retryBaseMs: number },
): FailureOutcome {
  const reason = (err.response || err.message || err.code || 'SMTP failure').slice(0, MAX_REASON);
  const code = err.responseCode;
  if (code !== undefined && code >= 500 && code < 600) return { kind: 'bounce', reason };
  if (attempt >= opts.maxAttempts) return { kind: 'failed', reason: `gave up after ${attempt} attempts: ${reason}` };
  return { kind: 'retry', delayMs: retryDelay(attempt, opts.retryBaseMs), reason };
}
