import { isUuid, uuidv7 } from './ids.js';

describe('uuidv7', () => {
  test('is a version 7, variant 1 uuid', () => {
    const id = uuidv7();
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('7');
    expect('89ab').toContain(id[19]);
  });

  test('ids minted in the same millisecond sort in minting order', () => {
    const at = Date.now() + 60_000;
    const ids = Array.from({ length: 5000 }, () => uuidv7(at));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('carries its millisecond timestamp', () => {
    const at = Date.UTC(2030, 0, 2, 3, 4, 5, 678) + 120_000;
    expect(Number.parseInt(uuidv7(at).replace(/-/g, '').slice(0, 12), 16)).toBe(at);
  });
});
