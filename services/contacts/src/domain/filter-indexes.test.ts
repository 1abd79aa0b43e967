import { createLogger } from '@svc/lib/logger';
import { FilterIndexLoop } from './filter-indexes.js';

// The background loop that runs reconciliations: one at a time, kicks while one runs coalesce, failures retry.

const logger = createLogger('silent');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('FilterIndexLoop', () => {
  test('one pass at a time; kicks during a pass make one more pass, not one each', async () => {
    let running = 0;
    let most = 0;
    let passes = 0;
    const loop = new FilterIndexLoop(
      async () => {
        running += 1;
        most = Math.max(most, running);
        passes += 1;
        await sleep(30);
        running -= 1;
        return true;
      },
      logger,
      60_000,
    );
    loop.start();
    loop.kick();
    loop.kick();
    loop.kick();
    await loop.idle();
    loop.stop();
    expect(most).toBe(1);
    expect(passes).toBe(2);
  });

  test('a failed pass (PostgreSQL down) and a pass that found the lock taken are retried later', async () => {
    const answers: Array<boolean | Error> = [new Error('connect ECONNREFUSED'), false, true];
    let passes = 0;
    const loop = new FilterIndexLoop(
      async () => {
        const answer = answers[passes++];
        if (answer instanceof Error) throw answer;
        return answer;
      },
      logger,
      20,
    );
    loop.start();
    for (let i = 0; i < 100 && passes < 3; i++) await sleep(20);
    await loop.idle();
    await sleep(60);
    loop.stop();
    expect(passes).toBe(3);
  });
});
