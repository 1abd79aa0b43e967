import { isDependencyUnavailable } from './dependency-errors.js';
import type { Logger } from './logger.js';

/**
 * The process-wide last resort, one JSON log line per event. A lost database, broker or
 * peer must never take the process down: its reconnect logic recovers, and requests meanwhile
 * get 503. So a rejected promise nobody awaited is logged and the process goes on (the work it
 * belonged to already failed). An uncaught exception is tolerated only when it is such a
 * dependency error (a socket 'error' event without a listener); anything else is a bug that
 * may have left state half-changed, so it is logged and the process exits for its supervisor
 * to restart it.
 */
export function installCrashPolicy(logger: Logger): void {
  process.on('unhandledRejection', (reason) => {
    const transient = isDependencyUnavailable(reason);
    logger.error({ err: reason, kind: 'unhandledRejection', transient }, 'unhandled rejection');
  });
  process.on('uncaughtException', (err) => {
    if (isDependencyUnavailable(err)) {
      const msg = 'dependency error escaped its handler; continuing';
      logger.error({ err, kind: 'uncaughtException', transient: true }, msg);
      return;
    }
    logger.fatal({ err, kind: 'uncaughtException' }, 'uncaught exception; exiting');
    process.exit(1);
  });
}
