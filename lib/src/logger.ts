import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import { logFields } from './request-context.js';

export type { Logger };

/** Every line logged inside a request (HTTP, RPC or a consumed bus message) carries `requestId` and `traceId`. */
export function createLogger(
  level: string,
  base: Record<string, unknown> = {},
  format: 'auto' | 'json' | 'pretty' = 'json',
): Logger {
  const options = { level, base, timestamp: pino.stdTimeFunctions.isoTime, mixin: logFields };
  const wanted = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (!wanted) return pino(options);
  // pino-pretty on this thread (a terminal's pace needs no worker thread, which costs about 10 MB of RSS), loaded
  // only here: colours, local time, no pid/hostname noise; synchronous, so a crash's last lines are on screen
  // before the process exits.
  const pretty: typeof PinoPretty = createRequire(import.meta.url)('pino-pretty');
  return pino(options, pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', sync: true }));
}
