import { SingleFlight } from './single-flight.js';

describe('SingleFlight', () => {
  it('runs one call per key while it is in flight, and a fresh one after it settles or is forgotten', async () => {
    const flight = new SingleFlight<number>();
    let calls = 0;
    const slow = () => new Promise<number>((r) => setImmediate(() => r(++calls)));
    expect(await Promise.all([flight.run('a', slow), flight.run('a', slow), flight.run('b', slow)])).toEqual([1, 1, 2]);
    expect(await flight.run('a', slow)).toBe(3);
    const pending = flight.run('a', slow);
    flight.forget('a');
    expect(await Promise.all([pending, flight.run('a', slow)])).toEqual([4, 5]);
  });

  it('shares a failure with the callers in flight only', async () => {
    const flight = new SingleFlight<number>();
    const failing = flight.run('a', () => Promise.reject(new Error('down')));
    await expect(Promise.all([failing, flight.run('a', async () => 1)])).rejects.toThrow('down');
    expect(await flight.run('a', async () => 2)).toBe(2);
  });
});
