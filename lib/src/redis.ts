import { Redis, ReplyError } from 'ioredis';
import type { Logger } from './logger.js';

export interface RedisLinkOptions {
  /** A command that takes longer fails (REDIS_COMMAND_TIMEOUT_MS). */
  commandTimeoutMs: number;
  logger: Logger;
  /** After a failure, calls skip Redis this long before one call probes it again. */
  breakMs?: number;
  /** What callers do while Redis is down, for the "down" log line. */
  degradedTo?: string;
}

/** Thrown without touching Redis while the breaker is open: callers degrade at once. */
export class RedisUnavailableError extends Error {
  constructor() {
    super('Redis is unavailable');
  }
}

/** Reconnect forever, backing off to at most two seconds between attempts. */
const retryStrategy = (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 6), 2000);

/**
 * One Redis connection used on the request path, behind a circuit breaker: commands never
 * queue while disconnected (enableOfflineQueue false) and time out after commandTimeoutMs;
 * after a failure (refused, reset, timed out: a frozen server) calls fail immediately for
 * `breakMs`, then one call probes. Every transition is one log line ("redis down" / "redis up"),
 * and ioredis's own errors go to the same log instead of stderr.
 */
export class RedisLink {
  readonly client: Redis;
  /** 'starting' until the first connection: calls fail fast, and nothing is logged as a change yet. */
  private state: 'starting' | 'up' | 'down' = 'starting';
  private openUntil = 0;
  private probing = false;
  private readonly breakMs: number;

  constructor(
    url: string,
    private readonly opts: RedisLinkOptions,
  ) {
    this.breakMs = opts.breakMs ?? 1000;
    this.client = new Redis(url, {
      commandTimeout: opts.commandTimeoutMs,
      connectTimeout: Math.max(1000, opts.commandTimeoutMs * 4),
      // ioredis arms this timer on disconnect even when the socket is already gone: keep stops short.
      disconnectTimeout: opts.commandTimeoutMs,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy,
      lazyConnect: false,
    });
    // Without an 'error' listener ioredis prints "[ioredis] Unhandled error event" to stderr.
    this.client.on('error', (err: Error) => this.markDown(err));
    this.client.on('close', () => this.markDown(new Error('connection closed')));
    this.client.on('ready', () => this.markUp());
  }

  /** Runs `op` unless the breaker is open; a failure opens it (a Redis error reply does not). */
  async run<T>(op: (redis: Redis) => Promise<T>): Promise<T> {
    let probe = false;
    if (this.state === 'starting') throw new RedisUnavailableError();
    if (this.state === 'down') {
      if (this.probing || Date.now() < this.openUntil) throw new RedisUnavailableError();
      this.probing = probe = true;
    }
    try {
      const value = await op(this.client);
      this.markUp();
      return value;
    } catch (err) {
      if (!(err instanceof ReplyError)) this.markDown(err as Error);
      throw err;
    } finally {
      if (probe) this.probing = false;
    }
  }

  get available(): boolean {
    return this.state === 'up';
  }

  disconnect(): void {
    this.client.removeAllListeners('close');
    this.client.disconnect();
  }

  private markDown(err: Error): void {
    this.openUntil = Date.now() + this.breakMs;
    if (this.state === 'down') return;
    this.state = 'down';
    this.opts.logger.warn(
      { dependency: 'redis', state: 'down', reason: err.message },
      `redis down${this.opts.degradedTo ? `: ${this.opts.degradedTo}` : ''}`,
    );
  }

  private markUp(): void {
    if (this.state === 'up') return;
    this.state = 'up';
    this.openUntil = 0;
    this.opts.logger.info({ dependency: 'redis', state: 'up' }, 'redis up');
  }
}
