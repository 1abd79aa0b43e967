import { buildMessage } from '../../delivery/mime-build.js';
import { serveSigningJobs } from '../signing-jobs.js';

// For signing-pool.test.ts: a signing thread that dies when it reaches a message with the
// subject "exit" (process.exit) or "throw" (an uncaught exception), and signs the others.
serveSigningJobs(async (message) => {
  if (message.subject === 'exit') process.exit(3);
  if (message.subject === 'throw') {
    setImmediate(() => {
      throw new Error('boom in the signing thread');
    });
    await new Promise(() => undefined);
  }
  return buildMessage(message);
});
