import { z } from 'zod';
import { AppError, notFound } from './errors.js';
import { parseOrThrow } from './zod-errors.js';

describe('errors', () => {
  test('not found carries resource and id details', () => {
    const err = notFound('Contact', 'abc', 'CONTACT_NOT_FOUND');
    expect(err).toBeInstanceOf(AppError);
    expect(err.status).toBe(404);
    expect(err.details).toEqual({ resource: 'Contact', id: 'abc' });
  });

  test('zod issues become field errors with dotted paths', () => {
    const schema = z.object({ a: z.object({ b: z.string().email() }) });
    try {
      parseOrThrow(schema, { a: { b: 'nope' } });
      throw new Error('expected a throw');
    } catch (err) {
      const e = err as AppError;
      expect(e.code).toBe('VALIDATION_ERROR');
      expect(e.status).toBe(422);
      expect(e.errors).toEqual([{ field: 'a.b', message: 'Invalid email', code: 'invalid_string' }]);
    }
  });
});
