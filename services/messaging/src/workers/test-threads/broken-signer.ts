// For signing-pool.test.ts: a signing thread that cannot start.
throw new Error('this thread fails while loading');
