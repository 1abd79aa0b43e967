import { DueWorkLoop } from './due-work.js';
import { createLogger } from './logger.js';

const logger = createLogger('silent');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A queue of due numbers, claimed in order, with what each claim took and how many runs overlapped. */
function queue(runMs: number) {
  const due: number[] = [];
  const claims: number[][] = [];
  let running = 0;
  let overlap = 0;
  return {
    due,
    claims,
    maxOverlap: () => overlap,
    claim: async (limit: number) => {
      const items = due.splice(0, limit);
      if (items.length) claims.push(items);
      return items;
    },
    run: async () => {
      overlap = Math.max(overlap, ++running);
      await sleep(runMs);
      running--;
    },
  };
}

describe('DueWorkLoop with gatherMs', () => {
  test('wake-ups in a stream are claimed in batches, by one lane while batches are not full', async () => {
    const q = queue(20);
    const loop = new DueWorkLoop({
      name: 'test-gather',
      logger,
      claim: q.claim,
      run: q.run,
      batchSize: 100,
      lanes: 4,
      pollMs: 60_000,
      gatherMs: 30,
    });
    await loop.start();
    for (let i = 0; i < 60; i++) {
      q.due.push(i);
      loop.kick();
      if (i % 10 === 9) await sleep(5);
    }
    await sleep(200);
    await loop.stop();
    expect(q.claims.flat()).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(q.claims.length).toBeLessThanOrEqual(3);
    expect(q.maxOverlap()).toBe(1);
  });

  test('a full batch still starts another lane, so a backlog drains in parallel', async () => {
    const q = queue(30);
    const loop = new DueWorkLoop({
      name: 'test-gather-full',
      logger,
      claim: q.claim,
      run: q.run,
      batchSize: 10,
      lanes: 3,
      pollMs: 60_000,
      gatherMs: 5,
    });
    q.due.push(...Array.from({ length: 100 }, (_, i) => i));
    await loop.start();
    await sleep(400);
    await loop.stop();
    expect(q.claims.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(q.maxOverlap()).toBe(3);
  });

  test('without gatherMs each wake-up starts a lane at once while lanes are free', async () => {
    const q = queue(30);
    const loop = new DueWorkLoop({
      name: 'test-eager',
      logger,
      claim: q.claim,
      run: q.run,
      batchSize: 100,
      lanes: 3,
      pollMs: 60_000,
    });
    await loop.start();
    for (let i = 0; i < 3; i++) {
      q.due.push(i);
      loop.kick();
      await sleep(2);
    }
    await sleep(100);
    await loop.stop();
    expect(q.claims).toEqual([[0], [1], [2]]);
    expect(q.maxOverlap()).toBe(3);
  });
});
