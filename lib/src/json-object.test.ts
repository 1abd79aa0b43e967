import { z } from 'zod';
import { fieldErrors } from './zod-errors.js';
import { jsonObject } from './json-object.js';

test('a __proto__ key stays an ordinary key (z.record drops it); no prototype is set', () => {
  const input = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1, "a": 2}');
  expect(Object.keys(z.record(z.unknown()).parse(input))).toEqual(['constructor', 'a']);
  const out = jsonObject().parse(input);
  expect(Object.keys(out)).toEqual(['__proto__', 'constructor', 'a']);
  expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":true},"constructor":1,"a":2}');
  expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});

test('anything but a plain object is a 422 invalid_type naming the field', () => {
  for (const value of [null, [], 'x', 1, new Date()]) {
    const result = z.object({ data: jsonObject() }).safeParse({ data: value });
    expect(!result.success && fieldErrors(result.error)).toEqual([
      { field: 'data', message: 'Expected object', code: 'invalid_type' },
    ]);
  }
});
