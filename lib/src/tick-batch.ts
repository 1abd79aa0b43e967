/**
 * Collects the calls made in one turn of the event loop and answers them with one call per key
 * (a DataLoader without a cache): the callers of a batch that run side by side (each awaiting its
 * own input) ask for one thing each, and the batch goes out as one RPC or one statement.
 */
export class TickBatch<K, I, O> {
  private pending = new Map<K, { input: I; resolve(o: O): void; reject(err: unknown): void }[]>();
  private scheduled = false;

  /**
   * @param run answers the inputs of one key, one output per input in order (at most `max` at once);
   *   a throw rejects every caller of that call.
   */
  constructor(
    private readonly run: (key: K, inputs: I[]) => Promise<O[]>,
    private readonly max = 1000,
  ) {}

  load(key: K, input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let list = this.pending.get(key);
      if (!list) this.pending.set(key, (list = []));
      list.push({ input, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // After the promise jobs now queued: every caller whose input is one await away has joined.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const pending = this.pending;
    this.pending = new Map();
    for (const [key, list] of pending) {
      for (let i = 0; i < list.length; i += this.max) {
        const part = list.slice(i, i + this.max);
        Promise.resolve(part.map((p) => p.input))
          .then((inputs) => this.run(key, inputs))
          .then(
            (out) => part.forEach((p, j) => p.resolve(out[j])),
            (err) => part.forEach((p) => p.reject(err)),
          );
      }
    }
  }
}
