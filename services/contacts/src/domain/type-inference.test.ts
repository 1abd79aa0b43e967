import { flattenPaths, inferType, newFieldTypes, type FieldType } from './type-inference.js';

describe('inferType', () => {
  test('null and undefined infer no type (a type is fixed by the first non-null value)', () => {
    expect(inferType(null)).toBeNull();
    expect(inferType(undefined)).toBeNull();
  });

  test('a numeric value is number', () => {
    expect(inferType(42)).toBe('number');
    expect(inferType(-0.5)).toBe('number');
  });

  test('true or false is boolean', () => {
    expect(inferType(true)).toBe('boolean');
    expect(inferType(false)).toBe('boolean');
  });

  test('a string matching YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[.sss]Z is date', () => {
    expect(inferType('2024-02-29')).toBe('date');
    expect(inferType('2024-05-01T10:20:30Z')).toBe('date');
    expect(inferType('2024-05-01T10:20:30.123Z')).toBe('date');
  });

  test('other date formats are string: offsets, missing Z, other separators, other precisions', () => {
    for (const s of [
      '2024-05-01T10:20:30+02:00',
      '2024-05-01T10:20:30',
      '2024/05/01',
      '2024-05-01 10:20:30Z',
      '2024-05-01T10:20:30.1Z',
      '01-05-2024',
    ]) {
      expect(inferType(s)).toBe('string');
    }
  });

  test('a date-shaped string that is not a real calendar date is string', () => {
    for (const s of [
      '2023-02-29',
      '2024-13-01',
      '2024-04-31',
      '0000-01-01',
      '2024-05-01T24:00:00Z',
      '2024-05-01T10:60:00Z',
    ]) {
      expect(inferType(s)).toBe('string');
    }
  });

  test('anything else is string, including numeric-looking strings and arrays', () => {
    expect(inferType('hello')).toBe('string');
    expect(inferType('42')).toBe('string');
    expect(inferType(['a'])).toBe('string');
  });
});

describe('flattenPaths', () => {
  test('nested objects give dotted paths to their leaves; arrays are leaves', () => {
    expect(flattenPaths({ plan: 'pro', profile: { tier: 'gold', address: { city: 'Paris' } }, tags: ['a'] })).toEqual([
      { path: 'plan', value: 'pro' },
      { path: 'profile.tier', value: 'gold' },
      { path: 'profile.address.city', value: 'Paris' },
      { path: 'tags', value: ['a'] },
    ]);
  });
});

describe('newFieldTypes', () => {
  test('the type is inferred the first time a non-null value is seen for a path', () => {
    expect(newFieldTypes(new Map(), { seats: 3, profile: { since: '2020-01-01' }, gone: null })).toEqual([
      { path: 'seats', type: 'number' },
      { path: 'profile.since', type: 'date' },
    ]);
  });

  test('a known field keeps its type even when a value of another type is sent', () => {
    const known = new Map<string, FieldType>([['seats', 'number']]);
    expect(newFieldTypes(known, { seats: 'many', plan: 'pro' })).toEqual([{ path: 'plan', type: 'string' }]);
  });
});
