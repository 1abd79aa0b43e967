import type { Bus } from '@svc/lib/bus';
import { withTransaction, type Pool } from '@svc/lib/db';
import { serviceUnavailable } from '@svc/lib/errors';
import type { Logger } from '@svc/lib/logger';
import type { SegmentsStore } from './store/segments-store.js';

/** How often each process checks again (a consumer loop that made its durable again delivers until then). */
const SYNC_MS = 5_000;

/**
 * While no project tracks a segment, the membership consumers have nothing to do with any message (each would be
 * acknowledged unread, three a tracked event), so the broker stops sending them (Bus.pauseDeliveries). Every pass
 * reads the answer and pauses or restarts under one lock, and a segment's tracking starts with a pass (after its
 * row is written, before its baseline is read): a pass that read "none" has paused before that restart, so no
 * message published after the baseline's read is passed over.
 */
export class MembershipDeliveries {
  private timer?: NodeJS.Timeout;
  private passing?: Promise<void>;
  /** The membership consumers' durable and subjects (consumers.ts), once they are subscribed. */
  private group?: { durable: string; subjects: string[] };

  constructor(
    private readonly pool: Pool,
    private readonly store: SegmentsStore,
    private readonly bus: Bus,
    private readonly logger: Logger,
  ) {}

  /** Pauses or restarts the deliveries as the tracked segments say now; a no-op on a bus that cannot pause. */
  async sync(): Promise<void> {
    const pauseDeliveries = this.bus.pauseDeliveries?.bind(this.bus);
    const group = this.group;
    if (!pauseDeliveries || !group) return;
    await withTransaction(this.pool, async (tx) => {
      const paused = !(await this.store.anyTrackedLocked(tx));
      // A tracked segment's start waits for the broker (503, as any dependency down): a baseline read while the
      // durables may stay paused would miss the changes the broker passes over until the next pass.
      await pauseDeliveries(group.durable, group.subjects, paused).catch((err) => {
        this.logger.debug({ err }, 'membership deliveries: the broker did not answer');
        throw serviceUnavailable('The message bus is unavailable; retry shortly');
      });
    });
  }

  /** A pass now and every SYNC_MS (failures, such as NATS still connecting, wait for the next one). */
  start(group: { durable: string; subjects: string[] }): void {
    this.group = group;
    if (!this.bus.pauseDeliveries) return;
    const pass = () => {
      this.passing ??= this.sync()
        .catch((err) => this.logger.debug({ err }, 'membership deliveries not synced; next pass retries'))
        .finally(() => (this.passing = undefined));
    };
    pass();
    this.timer = setInterval(pass, SYNC_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.passing;
  }
}
