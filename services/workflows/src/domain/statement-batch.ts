import { isDependencyUnavailable } from '@svc/lib/dependency-errors';

/**
 * Writes that arrive while one is in flight queue up and share the next statement (a group commit without
 * BEGIN and COMMIT: the statement is its own transaction). When a shared statement fails, its inputs are
 * written one statement each, so one bad input fails only itself.
 */
export class StatementBatch<I, O> {
  private queue: { input: I; resolve(o: O): void; reject(err: unknown): void }[] = [];
  private running = false;

  constructor(
    private readonly write: (inputs: I[]) => Promise<O[]>,
    private readonly maxBatch = 200,
  ) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (this.running) return;
      this.running = true;
      // After this tick: inputs submitted together share the first statement.
      queueMicrotask(() => void this.lane());
    });
  }

  private async lane(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          const out = await this.write(batch.map((p) => p.input));
          batch.forEach((p, i) => p.resolve(out[i]));
        } catch (err) {
          if (batch.length === 1 || isDependencyUnavailable(err)) {
            for (const p of batch) p.reject(err);
            continue;
          }
          for (const p of batch) await this.write([p.input]).then((o) => p.resolve(o[0]), p.reject);
        }
      }
    } finally {
      this.running = false;
    }
  }
}
