import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { BuiltMessage } from '../delivery/mime-build.js';
import type { MailMessage } from '../delivery/smtp-transport.js';

// The signing pool's protocol (signing-pool.ts), and its threads' side of it (signing-thread.ts): a thread
// builds and DKIM-signs messages one at a time, in the order received. Jobs come in batches and answers go back
// in batches (one wake-up of each thread per batch, not per message); before each message the thread writes its
// job id to the slot shared with the pool, so when the thread dies the pool knows which message it was on,
// whatever answers it had not sent yet.

export interface SignJob {
  id: number;
  message: MailMessage;
}

export type SignResult =
  | { id: number; raw: Uint8Array; envelope: { from: string; to: string[] }; ready?: boolean }
  | { id: number; error: { message: string; code?: string } };

/** What the pool gives each thread (workerData): the shared slot of the job it is on (0: none). */
export interface SignThreadData {
  current: SharedArrayBuffer;
  /** The nice increment the thread applies to itself (0: none). */
  nice: number;
}

/** Answers sent together at most: the pool hands out more while the thread works on the rest. */
const ANSWER_BATCH = 4;

/**
 * Runs the thread's side of the pool's protocol with `build` (the tests' threads pass one that crashes on
 * purpose). Answers are flushed when the queue runs dry or ANSWER_BATCH are ready.
 */
export function serveSigningJobs(build: (message: MailMessage) => Promise<BuiltMessage>): void {
  const port = parentPort;
  if (!port) throw new Error('a signing thread runs as a worker thread of the signing pool');
  const { current: shared, nice } = workerData as SignThreadData;
  const current = new Float64Array(shared);
  // setpriority(2) with pid 0 changes the calling thread alone on Linux (nice is per thread there); elsewhere it
  // would lower the whole process, so only Linux applies it. Where the system refuses, the thread signs at the
  // process's priority, as before.
  if (nice > 0 && process.platform === 'linux') {
    try {
      setPriority(Math.min(19, getPriority() + nice));
    } catch {}
  }
  const queue: SignJob[] = [];
  let answers: SignResult[] = [];
  let transfer: ArrayBuffer[] = [];
  let busy = false;
  const flush = () => {
    port.postMessage(answers, transfer);
    answers = [];
    transfer = [];
  };

  async function drain(): Promise<void> {
    busy = true;
    for (let job = queue.shift(); job; job = queue.shift()) {
      current[0] = job.id;
      try {
        const built = await build(job.message);
        // A copy of the exact size, moved (not cloned) to the main thread.
        const raw = new Uint8Array(built.raw.byteLength);
        raw.set(built.raw);
        answers.push({ id: job.id, raw, envelope: built.envelope, ready: built.ready });
        transfer.push(raw.buffer);
      } catch (err) {
        const e = err as { message?: string; code?: string };
        answers.push({ id: job.id, error: { message: String(e?.message ?? err), code: e?.code } });
      }
      current[0] = 0;
      if (!queue.length || answers.length >= ANSWER_BATCH) flush();
    }
    busy = false;
  }

  port.on('message', (jobs: SignJob[]) => {
    queue.push(...jobs);
    if (!busy) void drain();
  });
}
