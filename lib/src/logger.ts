import { pino, type Logger } from 'pino';
import { logFields } from './request-context.js';

export type { Logger };

/** Every line logged inside a request (HTTP, RPC or a consumed bus message) carries `requestId` and `traceId`. */
export function createLogger(
  level: string,
  base: Record<string, unknown> = {},
  format: 'auto' | 'json' | 'pretty' = 'json',
): Logger {
  const options = { level, base, timestamp: pino.stdTimeFunctions.isoTime, mixin: logFields };
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (!pretty) return pino(options);
  // pino-pretty in a worker thread: colours, local time, no pid/hostname noise.
  const transport = pino.transport({
    target: 'pino-pretty',
    options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
  });
  return pino(options, transport);
}
