import { runInContext } from './request-context.js';

/** One item's outcome in a batch answer: each caller gets its own value or its own error. */
export type Settled<O> = { ok: true; value: O } | { ok: false; error: unknown };

export interface CallBatcherOptions<I = unknown> {
  /** How long the first item of a batch waits for others (ms); 0 sends each item alone, at once. */
  windowMs: number;
  /** A batch this large goes at once, without waiting for the window (counted in `weight`s when given). */
  maxBatch: number;
  /**
   * What one input counts towards `maxBatch` (1 when absent): e.g. its items, when the batch call takes at
   * most so many items. An input that would take the batch over `maxBatch` starts the next one.
   */
  weight?: (input: I) => number;
}

interface Waiting<I, O> {
  input: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

/**
 * Coalesces concurrent calls into one batch call: the first item opens a short window, the
 * batch goes when the window ends or it is full, whichever comes first. `send` answers one
 * outcome per item in order; when the whole batch fails, every item of it fails alike.
 */
export class CallBatcher<I, O> {
  private waiting: Waiting<I, O>[] = [];
  /** The waiting inputs' weight (their count without `weight`). */
  private weight = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly send: (inputs: I[]) => Promise<Settled<O>[]>,
    private readonly opts: CallBatcherOptions<I>,
  ) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const weight = this.opts.weight?.(input) ?? 1;
      if (this.waiting.length && this.weight + weight > this.opts.maxBatch) this.flush();
      this.waiting.push({ input, resolve, reject });
      this.weight += weight;
      if (this.weight >= this.opts.maxBatch || this.opts.windowMs <= 0) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.opts.windowMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting;
    this.waiting = [];
    this.weight = 0;
    // The batch serves many requests: it runs outside the one that happened to open it.
    runInContext(undefined, () => this.run(batch));
  }

  private async run(batch: Waiting<I, O>[]): Promise<void> {
    try {
      const results = await this.send(batch.map((w) => w.input));
      if (results.length !== batch.length) throw new Error(`batch of ${batch.length} answered ${results.length}`);
      batch.forEach((w, i) => {
        const r = results[i];
        if (r.ok) w.resolve(r.value);
        else w.reject(r.error);
      });
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
