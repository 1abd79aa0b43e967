import { AppError } from '@svc/lib/errors';
import { RESERVED_DATA_KEYS, applyDataPatch, splitDataPatch } from './custom-data.js';

function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected an AppError');
}

describe('splitDataPatch', () => {
  test('data must be an object: arrays, strings and null are a 422 on field data with code invalid_type', () => {
    for (const bad of [[1, 2], 'text', 42, null]) {
      const err = errorOf(() => splitDataPatch(bad));
      expect(err.status).toBe(422);
      expect(err.code).toBe('VALIDATION_ERROR');
      expect(err.errors).toEqual([expect.objectContaining({ field: 'data', code: 'invalid_type' })]);
    }
  });

  test('an absent data field is an empty patch', () => {
    expect(splitDataPatch(undefined)).toEqual({ patch: {}, oneOff: {} });
  });

  test('rule 2: primitive values (string, number, boolean) go into the stored patch', () => {
    expect(splitDataPatch({ plan: 'pro', seats: 3, trial: false }).patch).toEqual({
      plan: 'pro',
      seats: 3,
      trial: false,
    });
  });

  test('rule 3: null stays in the patch as the deletion marker', () => {
    expect(splitDataPatch({ plan: null }).patch).toEqual({ plan: null });
  });

  test('rule 4: an empty string is ignored, at the top level and inside nested objects', () => {
    expect(splitDataPatch({ plan: '', name: 'Ada', profile: { tier: '', city: 'Paris' } }).patch).toEqual({
      name: 'Ada',
      profile: { city: 'Paris' },
    });
    expect(splitDataPatch({ profile: { tier: '' } }).patch).toEqual({});
  });

  test('rule 5: {value, persistent: false} is a one-off value and is not stored', () => {
    const { patch, oneOff } = splitDataPatch({ code: { value: 'X1', persistent: false }, plan: 'pro' });
    expect(patch).toEqual({ plan: 'pro' });
    expect(oneOff).toEqual({ code: 'X1' });
  });

  test('rule 5: {value, persistent: true} is unwrapped into the stored patch', () => {
    const { patch, oneOff } = splitDataPatch({ plan: { value: 'pro', persistent: true } });
    expect(patch).toEqual({ plan: 'pro' });
    expect(oneOff).toEqual({});
  });

  test('rule 5: a one-off value inside a nested object stays one-off at its nested path', () => {
    const { patch, oneOff } = splitDataPatch({ order: { id: 7, coupon: { value: 'SAVE', persistent: false } } });
    expect(patch).toEqual({ order: { id: 7 } });
    expect(oneOff).toEqual({ order: { coupon: 'SAVE' } });
  });

  test('rule 5: an object with a value key but no boolean persistent flag is ordinary nested data', () => {
    expect(splitDataPatch({ metric: { value: 3, unit: 'kg' } }).patch).toEqual({ metric: { value: 3, unit: 'kg' } });
    expect(splitDataPatch({ metric: { value: 3 } }).patch).toEqual({ metric: { value: 3 } });
  });

  test('rule 6: every reserved key is silently dropped at the top level', () => {
    const input = Object.fromEntries(RESERVED_DATA_KEYS.map((k) => [k, 'x']));
    expect(RESERVED_DATA_KEYS).toEqual([
      'id',
      'svc_id',
      'svc_email',
      'email',
      'unsubscribeUrl',
      'subscribeUrl',
      'manageUrl',
    ]);
    expect(splitDataPatch({ ...input, plan: 'pro' })).toEqual({ patch: { plan: 'pro' }, oneOff: {} });
  });

  test('rule 6: a reserved name nested inside an object is ordinary data', () => {
    expect(splitDataPatch({ company: { id: 12 } }).patch).toEqual({ company: { id: 12 } });
  });

  test('rule 8: locale is stored like any other key', () => {
    expect(splitDataPatch({ locale: 'fr' }).patch).toEqual({ locale: 'fr' });
  });

  test('rule 9: nested objects and arrays are allowed', () => {
    expect(splitDataPatch({ profile: { tier: 'gold' }, tags: ['a', 'b'] }).patch).toEqual({
      profile: { tier: 'gold' },
      tags: ['a', 'b'],
    });
  });

  test('limit: keys longer than 255 characters are a 422 too_big on field data', () => {
    expect(splitDataPatch({ ['k'.repeat(255)]: 1 }).patch).toHaveProperty('k'.repeat(255));
    const err = errorOf(() => splitDataPatch({ nested: { ['k'.repeat(256)]: 1 } }));
    expect(err.errors).toEqual([expect.objectContaining({ field: 'data', code: 'too_big' })]);
  });

  test('limit: nesting deeper than 10 levels is a 422 too_big', () => {
    const nest = (levels: number): Record<string, unknown> => (levels === 1 ? { leaf: 1 } : { n: nest(levels - 1) });
    expect(() => splitDataPatch(nest(10))).not.toThrow();
    const err = errorOf(() => splitDataPatch(nest(11)));
    expect(err.errors?.[0]).toMatchObject({ field: 'data', code: 'too_big' });
  });

  test('limit: a data payload over 64 KiB serialized is a 422 too_big', () => {
    expect(() => splitDataPatch({ blob: 'x'.repeat(60_000) })).not.toThrow();
    const err = errorOf(() => splitDataPatch({ blob: 'x'.repeat(64 * 1024) }));
    expect(err.errors?.[0]).toMatchObject({ field: 'data', code: 'too_big' });
  });

  test('an empty key, at the top level or nested, is a 422 invalid_string on field data', () => {
    for (const data of [{ '': 1 }, { profile: { '': 'x' } }, { list: [{ '': null }] }]) {
      const err = errorOf(() => splitDataPatch(data));
      expect(err.errors).toEqual([expect.objectContaining({ field: 'data', code: 'invalid_string' })]);
    }
    expect(splitDataPatch({ ' ': 1 }).patch).toEqual({ ' ': 1 });
  });

  test('a __proto__ key stays an ordinary key and never changes a prototype', () => {
    const { patch } = splitDataPatch(JSON.parse('{"__proto__": {"polluted": true}, "a": 1}'));
    expect(Object.getPrototypeOf(patch)).toBe(Object.prototype);
    expect(Object.hasOwn(patch, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('applyDataPatch', () => {
  test('rule 1: only the keys sent change; other keys keep their values', () => {
    expect(applyDataPatch({ plan: 'free', city: 'Paris' }, { plan: 'pro' })).toEqual({
      data: { plan: 'pro', city: 'Paris' },
      changed: true,
    });
  });

  test('rule 3: null deletes the key', () => {
    expect(applyDataPatch({ plan: 'free', city: 'Paris' }, { plan: null })).toEqual({
      data: { city: 'Paris' },
      changed: true,
    });
  });

  test('rule 3: deleting an absent key changes nothing', () => {
    expect(applyDataPatch({ city: 'Paris' }, { plan: null })).toEqual({ data: { city: 'Paris' }, changed: false });
  });

  test('rule 9: nested objects merge key by key, and null inside one deletes that nested key', () => {
    const existing = { profile: { tier: 'gold', city: 'Paris', since: 2020 } };
    expect(applyDataPatch(existing, { profile: { tier: 'platinum', city: null } })).toEqual({
      data: { profile: { tier: 'platinum', since: 2020 } },
      changed: true,
    });
  });

  test('rule 9: a nested deletion under an absent object creates nothing', () => {
    expect(applyDataPatch({}, { profile: { tier: null } })).toEqual({ data: {}, changed: false });
  });

  test('rule 9: a nested object replaces a stored primitive at the same key', () => {
    expect(applyDataPatch({ profile: 'basic' }, { profile: { tier: 'gold' } })).toEqual({
      data: { profile: { tier: 'gold' } },
      changed: true,
    });
  });

  test('primitives and arrays replace the stored value', () => {
    expect(applyDataPatch({ tags: ['a', 'b'], n: 1 }, { tags: ['c'], n: 'one' }).data).toEqual({
      tags: ['c'],
      n: 'one',
    });
  });

  test('changed is false when every sent value equals the stored one', () => {
    const existing = { plan: 'pro', tags: ['a'], profile: { tier: 'gold' } };
    expect(applyDataPatch(existing, { plan: 'pro', tags: ['a'], profile: { tier: 'gold' } }).changed).toBe(false);
  });

  test('the stored object is not mutated', () => {
    const existing = { profile: { tier: 'gold' } };
    applyDataPatch(existing, { profile: { tier: null } });
    expect(existing).toEqual({ profile: { tier: 'gold' } });
  });

  test('rule 4 end to end: an empty string sent in data leaves the stored value', () => {
    const { patch } = splitDataPatch({ plan: '' });
    expect(applyDataPatch({ plan: 'pro' }, patch)).toEqual({ data: { plan: 'pro' }, changed: false });
  });
});

describe('custom data: NUL', () => {
  test.each([{ a: 'x\u0000' }, { 'k\u0000': 1 }, { list: ['ok', { deep: '\u0000' }] }])(
    'U+0000 in a key or string is a 422 (%#)',
    (data) => {
      expect(() => splitDataPatch(data)).toThrow(expect.objectContaining({ status: 422 }));
    },
  );
});
