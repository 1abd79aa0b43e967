import { pino, type Logger } from 'pino';
import { logFields } from './request-context.js';

export type { Logger };

/** Every line logged inside a request (HTTP, RPC or a consumed bus message) carries `requestId` and `traceId`. */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({ level, base, timestamp: pino.stdTimeFunctions.isoTime, mixin: logFields });
}
