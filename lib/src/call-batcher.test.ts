import { CallBatcher, type Settled } from './call-batcher.js';
import { contextFrom, currentContext, runInContext } from './request-context.js';

describe('CallBatcher', () => {
  test('concurrent calls share one batch call, each gets its own answer or error, in order', async () => {
    const sent: number[][] = [];
    const batcher = new CallBatcher<number, number>(
      async (inputs) => {
        sent.push(inputs);
        return inputs.map(
          (n): Settled<number> => (n < 0 ? { ok: false, error: new Error(`bad ${n}`) } : { ok: true, value: n * 2 }),
        );
      },
      { windowMs: 5, maxBatch: 100 },
    );
    const outcomes = await Promise.allSettled([1, -2, 3].map((n) => batcher.submit(n)));
    expect(sent).toEqual([[1, -2, 3]]);
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'rejected', reason: new Error('bad -2') },
      { status: 'fulfilled', value: 6 },
    ]);
  });

  test('a full batch goes at once; the rest waits for the next window', async () => {
    const sent: number[][] = [];
    const batcher = new CallBatcher<number, number>(
      async (inputs) => {
        sent.push(inputs);
        return inputs.map((value) => ({ ok: true, value }));
      },
      { windowMs: 10_000, maxBatch: 2 },
    );
    const first = Promise.all([batcher.submit(1), batcher.submit(2)]);
    await expect(first).resolves.toEqual([1, 2]);
    expect(sent).toEqual([[1, 2]]);
    const third = batcher.submit(3);
    const fourth = batcher.submit(4);
    await expect(Promise.all([third, fourth])).resolves.toEqual([3, 4]);
  });

  test('with weight, maxBatch counts weights: an input that would overflow the batch starts the next', async () => {
    const sent: number[][] = [];
    const batcher = new CallBatcher<number, number>(
      async (inputs) => {
        sent.push(inputs);
        return inputs.map((value) => ({ ok: true, value }));
      },
      { windowMs: 5, maxBatch: 10, weight: (n) => n },
    );
    await Promise.all([4, 5, 3, 10, 1].map((n) => batcher.submit(n)));
    // 4 + 5 waits; 3 would make 12 (4 + 5 goes); 3 + 10 would make 13 (3 goes); 10 is full and goes; 1 waits.
    expect(sent).toEqual([[4, 5], [3], [10], [1]]);
  });

  test('a failed batch call (or a short answer) fails each of its callers with that error', async () => {
    const down = new CallBatcher<number, number>(
      async () => {
        throw new Error('callee unavailable');
      },
      { windowMs: 1, maxBatch: 10 },
    );
    const outcomes = await Promise.allSettled([1, 2].map((n) => down.submit(n)));
    expect(outcomes.map((o) => (o as PromiseRejectedResult).reason.message)).toEqual([
      'callee unavailable',
      'callee unavailable',
    ]);
    const short = new CallBatcher<number, number>(async () => [{ ok: true, value: 1 }], { windowMs: 1, maxBatch: 10 });
    await expect(Promise.all([short.submit(1), short.submit(2)])).rejects.toThrow('batch of 2 answered 1');
  });

  test('windowMs 0 sends each call alone, and the batch call runs outside the caller request', async () => {
    const seen: Array<string | undefined> = [];
    const batcher = new CallBatcher<number, number>(
      async (inputs) => {
        seen.push(currentContext()?.requestId);
        return inputs.map((value) => ({ ok: true, value }));
      },
      { windowMs: 0, maxBatch: 10 },
    );
    const ctx = contextFrom({ requestId: 'req-batcher-1' });
    await runInContext(ctx, () => Promise.all([batcher.submit(1), batcher.submit(2)]));
    expect(seen).toEqual([undefined, undefined]);
  });
});
