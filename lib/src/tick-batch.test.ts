import { TickBatch } from './tick-batch.js';

describe('TickBatch', () => {
  test('calls made side by side go out as one call per key, answered in order', async () => {
    const calls: [string, number[]][] = [];
    const batch = new TickBatch<string, number, string>(async (key, inputs) => {
      calls.push([key, inputs]);
      return inputs.map((i) => `${key}${i}`);
    });
    const answers = await Promise.all([
      batch.load('a', 1),
      batch.load('b', 2),
      Promise.resolve().then(() => batch.load('a', 3)),
    ]);
    expect(answers).toEqual(['a1', 'b2', 'a3']);
    expect(calls).toEqual([
      ['a', [1, 3]],
      ['b', [2]],
    ]);
    expect(await batch.load('a', 4)).toBe('a4');
    expect(calls).toHaveLength(3);
  });

  test('splits at max; a failing call rejects only its own callers', async () => {
    const sizes: number[] = [];
    const batch = new TickBatch<string, number, number>((key, inputs) => {
      sizes.push(inputs.length);
      if (key === 'bad') throw new Error('down');
      return Promise.resolve(inputs.map((i) => i * 2));
    }, 2);
    const good = Promise.all([1, 2, 3].map((i) => batch.load('ok', i)));
    const bad = batch.load('bad', 9);
    await expect(good).resolves.toEqual([2, 4, 6]);
    await expect(bad).rejects.toThrow('down');
    expect(sizes).toEqual([2, 1, 1]);
  });
});
