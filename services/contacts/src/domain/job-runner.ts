import type { Logger } from '@svc/lib/logger';

/**
 * Polls for queued work and runs it one job at a time; `kick` wakes it when work is queued
 * here, the poll finds work queued by other replicas.
 */
export class JobRunner {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(private readonly passes: Array<() => Promise<boolean>>, private readonly logger: Logger, private readonly pollMs = 1000) {}

  start(): void {
    this.timer = setInterval(() => this.kick(), this.pollMs);
    this.kick();
  }

  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((err) => this.logger.error({ err }, 'job pass failed'))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async drain(): Promise<void> {
    for (let worked = true; worked && !this.stopped; ) {
      worked = false;
      for (const pass of this.passes) worked = (await pass()) || worked;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
