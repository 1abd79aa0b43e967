import { AppError } from './errors.js';
import { intParam, MAX_PAGE, namedSortColumn, offsetPage, totalPages } from './pagination.js';

describe('pagination query parameters (campaigns and messaging lists)', () => {
  test('offsetPage: defaults, offset, page size clamped to 100', () => {
    expect(offsetPage(undefined, undefined)).toEqual({ page: 1, pageSize: 20, offset: 0 });
    expect(offsetPage('3', '10')).toEqual({ page: 3, pageSize: 10, offset: 20 });
    expect(offsetPage('2', '500')).toEqual({ page: 2, pageSize: 100, offset: 100 });
    expect(totalPages(41, 20)).toBe(3);
  });

  test('a malformed or out-of-range value is a 422 naming the parameter', () => {
    const refused = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        expect(err).toBeInstanceOf(AppError);
        return (err as AppError).errors?.[0];
      }
      throw new Error('expected a 422');
    };
    expect(refused(() => offsetPage('0', undefined))).toMatchObject({ field: 'page', code: 'invalid_type' });
    expect(refused(() => offsetPage(String(MAX_PAGE + 1), undefined))?.message).toBe(
      `page must be an integer from 1 to ${MAX_PAGE}`,
    );
    expect(refused(() => intParam('1.5', 'limit', { min: 1, def: 50 }))).toMatchObject({
      field: 'limit',
      message: 'limit must be an integer of at least 1',
      received: '1.5',
    });
    expect(intParam(' 7 ', 'limit', { min: 1, def: 50, max: 5 })).toBe(5);
  });
});

test('namedSortColumn: the three sorts, anything else (prototype names too) created_at', () => {
  expect(['name', 'createdAt', 'updatedAt'].map(namedSortColumn)).toEqual(['name', 'created_at', 'updated_at']);
  for (const other of [undefined, '', 'email', '__proto__', 'constructor', 'toString']) {
    expect(namedSortColumn(other)).toBe('created_at');
  }
});
