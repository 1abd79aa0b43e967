import type { PoolClient } from './db.js';

interface Pending<I, O> {
  input: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

/**
 * Group commit: writes that arrive while a transaction is in flight queue up and share the
 * next one, so throughput is not bounded by one commit per request. If a shared transaction
 * fails, its writes are retried one transaction each, so one bad write fails only itself.
 */
export class GroupCommit<I, O> {
  private queue: Pending<I, O>[] = [];
  private flushing = false;

  constructor(
    private readonly begin: () => Promise<PoolClient>,
    private readonly write: (tx: PoolClient, input: I) => Promise<O>,
    private readonly maxBatch = 200,
  ) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, this.maxBatch);
        if (batch.length === 1) await this.runAlone(batch[0]);
        else await this.runTogether(batch);
      }
    } finally {
      this.flushing = false;
    }
  }

  private async runTogether(batch: Pending<I, O>[]): Promise<void> {
    const client = await this.begin();
    const results: O[] = [];
    try {
      await client.query('BEGIN');
      for (const p of batch) results.push(await this.write(client, p.input));
      await client.query('COMMIT');
    } catch {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      for (const p of batch) await this.runAlone(p);
      return;
    }
    client.release();
    batch.forEach((p, i) => p.resolve(results[i]));
  }

  private async runAlone(p: Pending<I, O>): Promise<void> {
    const client = await this.begin();
    try {
      await client.query('BEGIN');
      const result = await this.write(client, p.input);
      await client.query('COMMIT');
      p.resolve(result);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      p.reject(err);
    } finally {
      client.release();
    }
  }
}
