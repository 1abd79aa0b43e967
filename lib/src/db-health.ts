import type { QueryConfig } from 'pg';
import type { Pool } from './db.js';
import { isDependencyUnavailable } from './dependency-errors.js';
import type { Logger } from './logger.js';

const PROBE_TIMEOUT_MS = 1000;
const CACHE_MS = 1000;
// query_timeout per query is supported by node-postgres but missing from its types.
const PROBE = { text: 'SELECT 1', query_timeout: PROBE_TIMEOUT_MS } as QueryConfig;

/**
 * What a service knows about its PostgreSQL: up or down, logged once per change (not once per
 * failed request). Failures reported by requests and background loops mark it down; while down
 * a probe (`SELECT 1`, short timeout) runs every second and marks it up again.
 */
export class DbHealth {
  private down = false;
  private checked?: { at: number; ok: Promise<boolean> };
  private probeTimer?: NodeJS.Timeout;

  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
  ) {}

  /** True when `err` means the database is unavailable (the caller need not log it). */
  report(err: unknown): boolean {
    if (!isDependencyUnavailable(err)) return false;
    this.markDown(err);
    return true;
  }

  /** For health checks: a fresh probe at most once per second. */
  check(): Promise<boolean> {
    if (this.checked && Date.now() - this.checked.at < CACHE_MS) return this.checked.ok;
    return this.refresh();
  }

  private refresh(): Promise<boolean> {
    const ok = this.probe();
    this.checked = { at: Date.now(), ok };
    return ok;
  }

  private async probe(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('Query read timeout')), PROBE_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.pool.query(PROBE), timeout]);
      this.markUp();
      return true;
    } catch (err) {
      this.markDown(err);
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private markDown(err: unknown): void {
    if (this.down || this.pool.ending) return;
    this.down = true;
    this.checked = undefined;
    const reason = err instanceof Error ? ((err as { code?: string }).code ?? err.message) : String(err);
    this.logger.error({ dependency: 'postgres', state: 'down', reason }, 'PostgreSQL unavailable');
    this.probeTimer = setInterval(() => void this.refresh(), CACHE_MS);
    this.probeTimer.unref();
  }

  private markUp(): void {
    if (!this.down) return;
    this.down = false;
    clearInterval(this.probeTimer);
    this.logger.info({ dependency: 'postgres', state: 'up' }, 'PostgreSQL available again');
  }

  close(): void {
    clearInterval(this.probeTimer);
  }
}
