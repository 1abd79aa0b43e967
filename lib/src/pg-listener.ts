import type { Pool, PoolClient } from './db.js';
import type { Logger } from './logger.js';

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;

/**
 * A LISTEN connection that comes back by itself: a lost connection is released and opened
 * again with backoff. Losing it only costs latency, because its users also poll.
 */
export class PgListener {
  private client?: PoolClient;
  private retryMs = RETRY_MIN_MS;
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly pool: Pool,
    private readonly channel: string,
    private readonly onNotify: () => void,
    private readonly logger: Logger,
  ) {}

  /** True while the LISTEN connection is up (a notification sent now will reach us). */
  get listening(): boolean {
    return this.client !== undefined;
  }

  /** Resolves once listening, or after the first failure (a retry is then scheduled). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    let client: PoolClient | undefined;
    try {
      client = await this.pool.connect();
      const c = client;
      c.on('error', (err) => this.lost(c, err));
      c.on('notification', this.notified);
      await client.query(`LISTEN ${this.channel}`);
      if (this.retryMs > RETRY_MIN_MS) this.logger.info({ channel: this.channel }, 'listen connection restored');
      this.client = client;
      this.retryMs = RETRY_MIN_MS;
      this.onNotify(); // anything queued while we were away
    } catch (err) {
      if (client) this.lost(client, err);
      else this.scheduleRetry(err);
    }
  }

  private readonly notified = () => this.onNotify();
  private readonly released = new WeakSet<PoolClient>();

  private lost(client: PoolClient, err: unknown): void {
    if (this.client === client) this.client = undefined;
    if (!this.released.has(client)) {
      this.released.add(client);
      client.removeListener('notification', this.notified);
      client.release(err instanceof Error ? err : true); // destroyed, not reused
    }
    this.scheduleRetry(err);
  }

  private scheduleRetry(err: unknown): void {
    if (this.stopped || this.retryTimer) return;
    if (this.retryMs === RETRY_MIN_MS)
      this.logger.warn({ err, channel: this.channel }, 'listen connection lost; retrying');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, this.retryMs);
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    await client.query(`UNLISTEN ${this.channel}`).catch(() => undefined);
    if (this.released.has(client)) return;
    this.released.add(client);
    client.removeListener('notification', this.notified);
    client.release(true); // its error listener stays with it, so it is not handed to anyone else
  }
}
