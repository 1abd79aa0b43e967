import { releaseAfterFailure, type PoolClient } from './db.js';
import { isDependencyUnavailable } from './dependency-errors.js';
import { currentContext, runInContext, type RequestContext } from './request-context.js';

interface Pending<I, O> {
  input: I;
  resolve(value: O): void;
  reject(err: unknown): void;
  /** The submitter's request: its write (log lines, outbox rows) runs inside it, not inside the lane starter's. */
  context?: RequestContext;
}

export interface GroupCommitOptions<I, O> {
  /** Largest number of writes one transaction takes. */
  maxBatch?: number;
  /** Transactions in flight at once (1 batches best on a small machine; more helps when the database is remote). */
  lanes?: number;
  /**
   * Writes of a batch run sorted by this key (stable), so concurrent transactions take row
   * locks in one order and cannot deadlock; writes with the same key keep their arrival order.
   */
  lockOrder?: (input: I) => string;
  /**
   * Writes a whole batch set-based (a few statements instead of a few per write), answering in
   * input order; when it fails, the batch falls back to one `write` each. It runs outside any request
   * unless all inputs share one: `contexts[i]` is input i's, for outbox rows (`enqueueMany`'s `context`).
   */
  writeMany?: (tx: PoolClient, inputs: I[], contexts: Array<RequestContext | undefined>) => Promise<O[]>;
  /**
   * True when the writes of these inputs (`writeMany`, or `write` for one) are a single statement: it then runs
   * as its own transaction, without `BEGIN` and `COMMIT` (two round trips less).
   */
  oneStatement?: (inputs: I[]) => boolean;
  /**
   * `writeMany` sends `BEGIN` with its first statement and `COMMIT` with its last (`queryWithEnds` of db.ts), two
   * round trips less per batch: the group commit then sends neither around it (a write alone still gets both).
   */
  writeManyEnds?: boolean;
}

/**
 * Group commit: writes that arrive while transactions are in flight queue up and share the
 * next one, so throughput is not bounded by one commit per request. If a shared transaction
 * fails, its writes are retried one transaction each, so one bad write fails only itself.
 */
export class GroupCommit<I, O> {
  private queue: Pending<I, O>[] = [];
  private active = 0;
  private readonly maxBatch: number;
  private readonly lanes: number;

  constructor(
    private readonly begin: () => Promise<PoolClient>,
    private readonly write: (tx: PoolClient, input: I) => Promise<O>,
    private readonly opts: GroupCommitOptions<I, O> = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 200;
    this.lanes = opts.lanes ?? 1;
  }

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject, context: currentContext() });
      if (this.active < this.lanes) {
        // The lane starts after this tick: writes submitted together (a batch RPC's items) share its first transaction.
        this.active++;
        queueMicrotask(() => void this.lane());
      }
    });
  }

  /** Never rejects: whatever fails (even `begin`, when the database is down) rejects the batch's callers. */
  private async lane(): Promise<void> {
    try {
      while (this.queue.length) {
        let batch = this.queue.splice(0, this.maxBatch);
        if (this.opts.lockOrder && batch.length > 1) {
          const key = this.opts.lockOrder;
          batch = batch
            .map((p, i) => ({ p, i, k: key(p.input) }))
            .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : a.i - b.i))
            .map((x) => x.p);
        }
        try {
          if (batch.length === 1) await this.runAlone(batch[0]);
          else await this.runTogether(batch);
        } catch (err) {
          for (const p of batch) p.reject(err); // a settled promise ignores a second settle
        }
      }
    } finally {
      this.active--;
    }
  }

  private async runTogether(batch: Pending<I, O>[]): Promise<void> {
    const client = await this.begin();
    const results: O[] = [];
    const ends = Boolean(this.opts.writeMany && this.opts.writeManyEnds);
    const transaction = !ends && !this.opts.oneStatement?.(batch.map((p) => p.input));
    try {
      if (transaction) await client.query('BEGIN');
      const writeMany = this.opts.writeMany;
      if (writeMany) {
        const contexts = batch.map((p) => p.context);
        const shared = contexts.every((c) => c === contexts[0]) ? contexts[0] : undefined;
        results.push(
          ...(await runInContext(shared, () =>
            writeMany(
              client,
              batch.map((p) => p.input),
              contexts,
            ),
          )),
        );
      } else for (const p of batch) results.push(await runInContext(p.context, () => this.write(client, p.input)));
      if (transaction) await client.query('COMMIT');
    } catch (err) {
      await releaseAfterFailure(client, err);
      // A lost database fails every write alike: retrying them one by one would only wait longer.
      if (isDependencyUnavailable(err)) throw err;
      for (const p of batch) await this.runAlone(p);
      return;
    }
    client.release();
    batch.forEach((p, i) => p.resolve(results[i]));
  }

  private async runAlone(p: Pending<I, O>): Promise<void> {
    let client: PoolClient | undefined;
    try {
      client = await this.begin();
      const transaction = !this.opts.oneStatement?.([p.input]);
      if (transaction) await client.query('BEGIN');
      const result = await runInContext(p.context, () => this.write(client!, p.input));
      if (transaction) await client.query('COMMIT');
      client.release();
      p.resolve(result);
    } catch (err) {
      if (client) await releaseAfterFailure(client, err);
      p.reject(err);
    }
  }
}
