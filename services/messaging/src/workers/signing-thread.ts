import { parentPort } from 'node:worker_threads';
import { buildMessage } from '../delivery/mime-build.js';
import type { MailMessage } from '../delivery/smtp-transport.js';

// A thread of the signing pool (signing-pool.ts): builds and DKIM-signs one message at a time,
// in the order received, so that when the thread dies the pool knows which message it was on.

export interface SignJob {
  id: number;
  message: MailMessage;
}

export type SignResult =
  | { id: number; raw: Uint8Array; envelope: { from: string; to: string[] }; ready?: boolean }
  | { id: number; error: { message: string; code?: string } };

const port = parentPort;
if (!port) throw new Error('signing-thread.ts runs as a worker thread of the signing pool');

const queue: SignJob[] = [];

/** Buffers arrive as plain Uint8Arrays (structured clone); nodemailer wants Buffers for attachment content. */
function withBuffers(message: MailMessage): MailMessage {
  if (!message.attachments?.length) return message;
  return {
    ...message,
    attachments: message.attachments.map((a) => {
      const content = a.content as unknown;
      return content instanceof Uint8Array && !Buffer.isBuffer(content)
        ? { ...a, content: Buffer.from(content.buffer, content.byteOffset, content.byteLength) }
        : a;
    }),
  };
}
let busy = false;

async function drain(): Promise<void> {
  busy = true;
  for (let job = queue.shift(); job; job = queue.shift()) {
    try {
      const built = await buildMessage(withBuffers(job.message));
      // A copy of the exact size, moved (not cloned) to the main thread.
      const raw = new Uint8Array(built.raw.byteLength);
      raw.set(built.raw);
      port!.postMessage({ id: job.id, raw, envelope: built.envelope, ready: built.ready } satisfies SignResult, [
        raw.buffer,
      ]);
    } catch (err) {
      const e = err as { message?: string; code?: string };
      port!.postMessage({
        id: job.id,
        error: { message: String(e?.message ?? err), code: e?.code },
      } satisfies SignResult);
    }
  }
  busy = false;
}

port.on('message', (job: SignJob) => {
  queue.push(job);
  if (!busy) void drain();
});
