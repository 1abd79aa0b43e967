import type { Bus } from './bus.js';
import type { Pool } from './db.js';
import type { Logger } from './logger.js';
import type { OutboxRelay } from './outbox.js';

/** `events.>` to `events.%` (LIKE's own wildcards in a subject taken literally). */
function likePattern(subject: string): string {
  return subject
    .replace(/[\\%_]/g, (c) => `\\${c}`)
    .replace(/\.>$/, '.%')
    .replace(/\*/g, '%');
}

/**
 * When the broker loses a stream (a wiped JetStream store, a deleted stream), the messages it held
 * but consumers had not yet taken are gone. The outbox still holds every row published within its
 * retention window: marking those unpublished makes the relay send them again, in id order, with
 * their original message ids. Consumers are idempotent, so the ones already handled change nothing.
 */
export function refillLostStreams(bus: Bus, pool: Pool, relay: OutboxRelay, logger: Logger): void {
  bus.onStreamRecreated?.((subjects) => {
    pool
      .query('UPDATE outbox SET published_at = NULL WHERE published_at IS NOT NULL AND subject LIKE ANY($1::text[])', [
        subjects.map(likePattern),
      ])
      .then((res) => {
        const rows = res.rowCount;
        if (rows) logger.warn({ event: 'outbox.republish', subjects, rows }, 'stream lost: republishing');
        relay.kick();
      })
      .catch((err: unknown) => logger.error({ err, subjects }, 'stream lost: republishing failed'));
  });
}
