import { parentPort } from 'node:worker_threads';
import { buildMessage } from '../../delivery/mime-build.js';
import type { SignJob } from '../signing-thread.js';

// For signing-pool.test.ts: a signing thread that dies when it reaches a message with the
// subject "exit" (process.exit) or "throw" (an uncaught exception), and signs the others.

const queue: SignJob[] = [];
let busy = false;

async function drain(): Promise<void> {
  busy = true;
  for (let job = queue.shift(); job; job = queue.shift()) {
    if (job.message.subject === 'exit') process.exit(3);
    if (job.message.subject === 'throw') throw new Error('boom in the signing thread');
    const built = await buildMessage(job.message);
    parentPort!.postMessage({ id: job.id, raw: new Uint8Array(built.raw), envelope: built.envelope });
  }
  busy = false;
}

parentPort!.on('message', (job: SignJob) => {
  queue.push(job);
  if (!busy) void drain();
});
