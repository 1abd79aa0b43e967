import type { AppError } from '@svc/lib/errors';
import { validateCreate, validatePatch } from './segment-input.js';

const tree = { logic: 'AND', groups: [] };

describe('segment input', () => {
  test('DYNAMIC is the default type and trackMembership defaults to false', () => {
    expect(validateCreate({ name: 'A', type: '', condition: tree })).toEqual({
      name: 'A',
      description: null,
      type: 'DYNAMIC',
      condition: tree,
      trackMembership: false,
    });
  });

  test('a DYNAMIC segment without an object condition is the flat 400', () => {
    for (const condition of [undefined, null, [], 'x']) {
      const err = (() => {
        try {
          validateCreate({ name: 'A', type: 'DYNAMIC', condition });
        } catch (e) {
          return e as AppError;
        }
      })();
      expect(err).toMatchObject({ status: 400, flat: true });
    }
  });

  test('a STATIC segment ignores a condition', () => {
    expect(validateCreate({ name: 'A', type: 'STATIC', condition: tree }).condition).toBeNull();
  });

  test('name and description lengths, unknown types: 422 naming the fields', () => {
    expect(() => validateCreate({ name: 'x'.repeat(101), type: 'NOPE', description: 'd'.repeat(501) })).toThrow(
      expect.objectContaining({
        status: 422,
        errors: [
          expect.objectContaining({ field: 'name' }),
          expect.objectContaining({ field: 'description' }),
          expect.objectContaining({ field: 'type' }),
        ],
      }),
    );
  });

  test('PATCH refuses a condition on a STATIC segment and a non-object condition', () => {
    expect(() => validatePatch({ condition: tree }, 'STATIC')).toThrow(expect.objectContaining({ status: 422 }));
    expect(() => validatePatch({ condition: 'x' }, 'DYNAMIC')).toThrow(expect.objectContaining({ status: 422 }));
    expect(validatePatch({ name: 'B', condition: tree }, 'DYNAMIC')).toEqual({ name: 'B', condition: tree });
  });
});
