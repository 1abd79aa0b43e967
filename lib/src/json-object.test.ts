import { z } from 'zod';
import { fieldErrors } from './zod-errors.js';
import { jsonObject, templateVariables } from './json-object.js';

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

describe('templateVariables', () => {
  test('rule 5: one-off values are available to the template and win over stored values', () => {
    expect(templateVariables({ plan: 'pro', code: 'OLD' }, { code: 'NEW' })).toEqual({ plan: 'pro', code: 'NEW' });
  });

  test('one-off values inside nested objects overlay the stored nested object', () => {
    expect(templateVariables({ order: { id: 7, total: 10 } }, { order: { coupon: 'SAVE' } })).toEqual({
      order: { id: 7, total: 10, coupon: 'SAVE' },
    });
  });

  test('a __proto__ key is overlaid as a key; no prototype is set', () => {
    const stored = JSON.parse('{"__proto__": {"tier": "gold"}}');
    const out = templateVariables(stored, JSON.parse('{"__proto__": {"code": "X"}}'));
    expect(JSON.stringify(out)).toBe('{"__proto__":{"tier":"gold","code":"X"}}');
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});
