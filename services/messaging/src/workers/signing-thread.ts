import { buildMessage } from '../delivery/mime-build.js';
import { serveSigningJobs } from './signing-jobs.js';

// A thread of the signing pool (signing-pool.ts): builds and DKIM-signs the messages it is handed.
serveSigningJobs(buildMessage);
