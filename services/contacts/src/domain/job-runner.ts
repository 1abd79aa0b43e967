import { CoalescingTask } from '@svc/lib/coalescing-task';
import { logPassFailure } from '@svc/lib/dependency-errors';
import type { Logger } from '@svc/lib/logger';

/**
 * Polls for queued work and runs it one job at a time; `kick` wakes it when work is queued
 * here, the poll finds work queued by other replicas.
 */
export class JobRunner {
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly pass: CoalescingTask;

  constructor(private readonly passes: Array<() => Promise<boolean>>, logger: Logger, private readonly pollMs = 1000) {
    this.pass = new CoalescingTask(() => this.drain(), (err) => logPassFailure(logger, err, {}, 'job pass failed', 'error'));
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), this.pollMs);
    this.kick();
  }

  kick(): void {
    this.pass.kick();
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
    await this.pass.stop();
  }
}
