import { isDependencyUnavailable } from '@svc/lib/dependency-errors';

/** How a statement waits for more inputs before it goes: while fewer than `fill` are queued, up to `ms`. */
export interface Gather {
  ms: number;
  fill: number;
}

/**
 * Writes that arrive while one is in flight queue up and share the next statement (a group commit without
 * BEGIN and COMMIT: the statement is its own transaction). With `gather`, a statement of fewer than `fill`
 * inputs first waits up to `ms` for more (the wait ends as soon as `fill` are queued): a steady stream of
 * inputs then shares fewer, larger statements, at the cost of that wait. When a shared statement fails,
 * its inputs are written one statement each, so one bad input fails only itself.
 */
export class StatementBatch<I, O> {
  private queue: { input: I; resolve(o: O): void; reject(err: unknown): void }[] = [];
  private running = false;
  /** Ends the lane's gathering wait early (set while it waits). */
  private filled?: () => void;

  constructor(
    private readonly write: (inputs: I[]) => Promise<O[]>,
    private readonly maxBatch = 200,
    private readonly gather: Gather = { ms: 0, fill: 0 },
  ) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (this.filled && this.queue.length >= this.gather.fill) this.filled();
      if (this.running) return;
      this.running = true;
      // After this tick: inputs submitted together share the first statement.
      queueMicrotask(() => void this.lane());
    });
  }

  private async lane(): Promise<void> {
    try {
      while (this.queue.length) {
        if (this.gather.ms > 0 && this.queue.length < this.gather.fill) await this.gathered();
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

  /** Resolves after `gather.ms`, or once `gather.fill` inputs are queued. */
  private gathered(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.filled = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.gather.ms);
      this.filled = done;
    });
  }
}
