import { runInContext } from './request-context.js';

/**
 * Runs an async task now, or once more right after the run in progress: any number of
 * kicks during a run coalesce into one follow-up run. Never two runs at once.
 */
export class CoalescingTask {
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(
    private readonly task: () => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
  ) {}

  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // Background work: a run kicked from inside a request does not belong to that request.
    this.running = runInContext(undefined, () => this.task())
      .then(() => undefined, this.onError)
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** No further runs; resolves when the current one is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}
