import { ProjectThrottle } from './throttle.js';

describe('per-project throttle', () => {
  test('allows the rate per second, then asks to wait; projects do not share a bucket', () => {
    const t = new ProjectThrottle(2);
    expect(t.take('p', 0)).toBe(0);
    expect(t.take('p', 0)).toBe(0);
    expect(t.take('p', 0)).toBe(500);
    expect(t.take('q', 0)).toBe(0);
    expect(t.take('p', 500)).toBe(0);
  });
});
