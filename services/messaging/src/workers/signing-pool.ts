import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '@svc/lib/logger';
import { buildMessage, type BuiltMessage } from '../delivery/mime-build.js';
import type { MailMessage } from '../delivery/smtp-transport.js';
import type { SignJob, SignResult, SignThreadData } from './signing-jobs.js';

/** Turns a message into signed MIME bytes: on a pool of threads (SigningPool) or on the calling thread (inline). */
export interface MessageBuilder {
  build(message: MailMessage): Promise<BuiltMessage>;
  close(): Promise<void>;
}

/** DKIM_WORKERS=0: build and sign on the main thread, as before the pool. */
export const inlineBuilder: MessageBuilder = { build: buildMessage, close: async () => undefined };

export interface SigningPoolOptions {
  size: number;
  logger: Logger;
  /** The thread's entry module; tests pass one that crashes on purpose. */
  threadUrl?: URL;
  /** Messages handed to a thread ahead of its answers (it works through them in order). */
  window?: number;
  /** A pool with nothing to do for this long ends its threads; the next message starts them again. */
  idleMs?: number;
  /**
   * While no thread runs, up to this many messages a second are built on the calling thread (about half a
   * millisecond each): a thread costs some 30 MiB while it lives and leaves about 10 MiB behind, which a
   * project sending a few mails an hour should not pay. More than this starts the threads. 0: always threads.
   */
  inlineBelowPerSecond?: number;
  /**
   * Each thread lowers its own scheduling priority by this much (a nice increment; on Linux a thread's own), so the
   * process's main thread and other processes come first: signing takes the CPU they leave. 0: unchanged.
   */
  nice?: number;
}

interface Job {
  id: number;
  message: MailMessage;
  resolve(built: BuiltMessage): void;
  reject(err: Error): void;
  /** Thread deaths while this was the message the thread was working on. */
  crashes: number;
}

interface Slot {
  worker: Worker;
  /** In the order sent; the thread answers in that order (in batches). */
  inFlight: Job[];
  /** The id of the job the thread is on (0: none), written by the thread: the culprit when it dies. */
  current: Float64Array;
  startedAt: number;
  answered: boolean;
  retiring: boolean;
}

/** A message that killed its thread this many times is failed (the delivery worker retries it later). */
const MAX_CRASHES = 2;
/** Threads that die before their first answer this many times in a row: the pool signs inline instead. */
const MAX_START_FAILURES = 3;

const THREAD_URL = new URL(`./signing-thread${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/** The file URL of tsx's ESM API (its `import` entry: the CommonJS one cannot be imported from an ES module thread). */
function tsxApiUrl(): string {
  const pkgPath = createRequire(import.meta.url).resolve('tsx/package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  return pathToFileURL(path.join(path.dirname(pkgPath), pkg.exports['./esm/api'].import.default)).href;
}

/**
 * A thread on `url`. TypeScript sources (the platform runs them through tsx, whose `--import` hook
 * does not reach worker threads on Node 20) are loaded with tsx's API.
 */
function startThread(url: URL, workerData: SignThreadData): Worker {
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { workerData });
  const tsx = tsxApiUrl();
  const boot =
    `import(${JSON.stringify(tsx)}).then((api) => ` +
    `(api.tsImport ?? api.default.tsImport)(${JSON.stringify(url.href)}, ${JSON.stringify(import.meta.url)}))`;
  return new Worker(boot, { eval: true, execArgv: [], workerData });
}

/**
 * Builds and DKIM-signs messages on `size` worker threads (one RSA-2048 signature is about a
 * millisecond of CPU, which would otherwise cap the main thread's event loop). Messages go to a thread,
 * and come back, in batches: a message each way cost a wake-up of both threads. A thread that
 * dies is replaced; the messages it held are sent to another thread, and the one it was
 * working on fails after MAX_CRASHES deaths so a poison message cannot loop. The process
 * never dies with a thread.
 */
export class SigningPool implements MessageBuilder {
  private readonly slots: (Slot | undefined)[];
  private readonly queue: Job[] = [];
  private readonly threadUrl: URL;
  private readonly window: number;
  private readonly idleMs: number;
  private nextId = 1;
  private closed = false;
  private startFailures = 0;
  private idleTimer?: NodeJS.Timeout;
  /** A dispatch is due on the next tick: the builds asked for meanwhile go out together. */
  private dispatchDue = false;
  /** Builds asked for in the current second (`second`, in whole seconds since the epoch). */
  private second = 0;
  private inSecond = 0;

  constructor(private readonly opts: SigningPoolOptions) {
    this.slots = new Array(Math.max(1, opts.size)).fill(undefined);
    this.threadUrl = opts.threadUrl ?? THREAD_URL;
    this.window = opts.window ?? 8;
    this.idleMs = opts.idleMs ?? 60_000;
  }

  /** Threads running now (they start on the first message and end after idleMs without work). */
  get threads(): number {
    return this.slots.filter(Boolean).length;
  }

  build(message: MailMessage): Promise<BuiltMessage> {
    if (this.closed) return Promise.reject(new Error('the signing pool is closed'));
    if (this.startFailures >= MAX_START_FAILURES || this.light()) return buildMessage(message);
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = undefined;
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, message, resolve, reject, crashes: 0 });
      if (this.dispatchDue) return;
      this.dispatchDue = true;
      process.nextTick(() => {
        this.dispatchDue = false;
        this.dispatch();
      });
    });
  }

  /** No thread is running and this second has not yet asked for more than `inlineBelowPerSecond` builds. */
  private light(): boolean {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.inSecond = 0;
    }
    this.inSecond++;
    return this.threads === 0 && this.inSecond <= (this.opts.inlineBelowPerSecond ?? 0);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const gone = new Error('the signing pool is closed');
    for (const job of this.queue.splice(0)) job.reject(gone);
    await Promise.all(
      this.slots.map(async (slot, i) => {
        if (!slot) return;
        this.slots[i] = undefined;
        for (const job of slot.inFlight.splice(0)) job.reject(gone);
        await slot.worker.terminate();
      }),
    );
  }

  /** Hands queued messages to the least loaded threads, starting threads in empty slots; one batch per thread. */
  private dispatch(): void {
    if (this.closed) return;
    if (this.startFailures >= MAX_START_FAILURES) {
      for (const job of this.queue.splice(0)) buildMessage(job.message).then(job.resolve, job.reject);
      return;
    }
    const batches = new Map<Slot, SignJob[]>();
    while (this.queue.length) {
      let best: Slot | undefined;
      for (let i = 0; i < this.slots.length; i++) {
        const slot = this.slots[i] ?? this.spawn(i);
        if (slot.inFlight.length < this.window && (!best || slot.inFlight.length < best.inFlight.length)) best = slot;
      }
      if (!best) break; // every thread has a full window; an answer calls dispatch again
      const job = this.queue.shift()!;
      best.inFlight.push(job);
      const batch = batches.get(best);
      if (batch) batch.push({ id: job.id, message: job.message });
      else batches.set(best, [{ id: job.id, message: job.message }]);
    }
    for (const [slot, jobs] of batches) slot.worker.postMessage(jobs);
  }

  private spawn(i: number): Slot {
    const current = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT);
    const slot: Slot = {
      worker: startThread(this.threadUrl, { current, nice: this.opts.nice ?? 0 }),
      inFlight: [],
      current: new Float64Array(current),
      startedAt: Date.now(),
      answered: false,
      retiring: false,
    };
    this.slots[i] = slot;
    slot.worker.on('message', (results: SignResult[]) => this.onAnswers(slot, results));
    // Without an 'error' listener a thread's uncaught exception would be rethrown on the main thread.
    slot.worker.on('error', (err) => this.opts.logger.error({ err }, 'DKIM signing thread failed'));
    slot.worker.on('exit', (code) => this.onExit(i, slot, code));
    return slot;
  }

  private onAnswers(slot: Slot, results: SignResult[]): void {
    for (const result of results) {
      const at = slot.inFlight.findIndex((j) => j.id === result.id);
      if (at < 0) continue;
      const [job] = slot.inFlight.splice(at, 1);
      slot.answered = true;
      this.startFailures = 0;
      if ('error' in result) {
        const { message, code } = result.error;
        job.reject(Object.assign(new Error(message), code ? { code } : {}));
      } else {
        const raw = Buffer.from(result.raw.buffer, result.raw.byteOffset, result.raw.byteLength);
        job.resolve({ raw, envelope: result.envelope, ready: result.ready });
      }
    }
    this.dispatch();
    this.scheduleIdle();
  }

  private onExit(i: number, slot: Slot, code: number): void {
    if (this.slots[i] === slot) this.slots[i] = undefined;
    if (this.closed || slot.retiring) return;
    // The message the thread was on (it wrote its id before starting it); the others are handed on untouched,
    // those it had built but not yet answered among them.
    const held = slot.inFlight.splice(0);
    const current = held.find((j) => j.id === slot.current[0]);
    const waiting = held.filter((j) => j !== current);
    if (!slot.answered && Date.now() - slot.startedAt < 5_000) this.startFailures++;
    this.opts.logger.error(
      { code, held: held.length, startFailures: this.startFailures },
      'DKIM signing thread exited; starting another and handing its messages on',
    );
    const retry: Job[] = [];
    if (current) {
      current.crashes++;
      if (current.crashes >= MAX_CRASHES) {
        current.reject(new Error(`DKIM signing thread exited (code ${code}) ${current.crashes} times on this message`));
      } else retry.push(current);
    }
    this.queue.unshift(...retry, ...waiting);
    if (this.startFailures === MAX_START_FAILURES)
      this.opts.logger.error('DKIM signing threads do not start; signing on the main thread instead');
    this.dispatch();
  }

  /** When nothing is queued or in flight, ends the threads after idleMs (they hold memory, not CPU). */
  private scheduleIdle(): void {
    if (this.idleTimer || this.queue.length || this.slots.some((s) => s?.inFlight.length)) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      for (let i = 0; i < this.slots.length; i++) {
        const slot = this.slots[i];
        if (!slot || slot.inFlight.length) continue;
        slot.retiring = true;
        this.slots[i] = undefined;
        void slot.worker.terminate();
      }
    }, this.idleMs);
    this.idleTimer.unref();
  }
}

/** Messages a second a pool builds on the main thread before it starts its threads (SigningPoolOptions). */
const INLINE_BELOW_PER_SECOND = 20;

/** DKIM_WORKERS threads (started once mail comes faster than a trickle), or the main thread when it is 0. */
export function messageBuilder(size: number, logger: Logger, nice = 0): MessageBuilder {
  return size > 0
    ? new SigningPool({ size, logger, nice, inlineBelowPerSecond: INLINE_BELOW_PER_SECOND })
    : inlineBuilder;
}
