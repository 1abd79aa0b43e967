import { StatementBatch } from './statement-batch.js';

/** A write that records each statement's inputs and answers each input doubled (a failing input: negative). */
function recorder() {
  const statements: number[][] = [];
  const write = async (inputs: number[]) => {
    statements.push(inputs);
    if (inputs.length > 1 && inputs.some((i) => i < 0)) throw new Error('one bad input');
    if (inputs[0] < 0) throw new Error('bad input');
    return inputs.map((i) => i * 2);
  };
  return { statements, write };
}

describe('StatementBatch', () => {
  test('inputs submitted together share one statement; each gets its own answer', async () => {
    const r = recorder();
    const batch = new StatementBatch(r.write);
    expect(await Promise.all([1, 2, 3].map((i) => batch.submit(i)))).toEqual([2, 4, 6]);
    expect(r.statements).toEqual([[1, 2, 3]]);
  });

  test('a failed shared statement writes its inputs one each, so only the bad input fails', async () => {
    const r = recorder();
    const batch = new StatementBatch(r.write);
    const out = await Promise.allSettled([1, -1, 3].map((i) => batch.submit(i)));
    expect(out.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(r.statements).toEqual([[1, -1, 3], [1], [-1], [3]]);
  });
});
