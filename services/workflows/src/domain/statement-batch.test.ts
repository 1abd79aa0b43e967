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

const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

  test('with gather, a statement of fewer than `fill` inputs waits up to `ms` for more', async () => {
    const r = recorder();
    const batch = new StatementBatch(r.write, 200, { ms: 200, fill: 10 });
    const first = batch.submit(1);
    await later(20);
    expect(r.statements).toEqual([]); // still gathering
    const rest = [2, 3].map((i) => batch.submit(i));
    expect(await Promise.all([first, ...rest])).toEqual([2, 4, 6]);
    expect(r.statements).toEqual([[1, 2, 3]]);
  });

  test('with gather, the statement goes as soon as `fill` inputs are queued', async () => {
    const r = recorder();
    const batch = new StatementBatch(r.write, 200, { ms: 60_000, fill: 3 });
    const started = Date.now();
    const out = [batch.submit(1)];
    await later(5);
    out.push(batch.submit(2));
    await later(5);
    out.push(batch.submit(3));
    expect(await Promise.all(out)).toEqual([2, 4, 6]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r.statements).toEqual([[1, 2, 3]]);
  });

  test('with gather, inputs queued beyond `fill` while a statement runs go next without waiting', async () => {
    const statements: number[][] = [];
    let release: () => void = () => undefined;
    const write = async (inputs: number[]) => {
      statements.push(inputs);
      if (statements.length === 1) await new Promise<void>((resolve) => (release = resolve));
      return inputs;
    };
    const batch = new StatementBatch(write, 200, { ms: 60_000, fill: 2 });
    const out = [batch.submit(1), batch.submit(2)];
    await later(5);
    out.push(batch.submit(3), batch.submit(4));
    release();
    expect(await Promise.all(out)).toEqual([1, 2, 3, 4]);
    expect(statements).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });
});
