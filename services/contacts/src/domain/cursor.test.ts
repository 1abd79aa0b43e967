import { AppError } from '@svc/lib/errors';
import { decodeCursor, encodeCursor } from './cursor.js';

const id = '3f2b6c1e-1d2c-4c1a-9a7e-0a1b2c3d4e5f';

describe('cursor', () => {
  test('round-trips', () => {
    const c = { sort: 'createdAt', dir: 'desc', value: '2026-01-01 10:00:00.123456+00', id };
    expect(decodeCursor(encodeCursor(c), 'createdAt', 'desc')).toEqual(c);
  });
  test.each([
    'garbage',
    Buffer.from('[1,2]').toString('base64url'),
    Buffer.from(JSON.stringify(['createdAt', 'desc', 'x', 'not-a-uuid'])).toString('base64url'),
  ])('a forged cursor is a 400 (%s)', (raw) => expect(() => decodeCursor(raw, 'createdAt', 'desc')).toThrow(AppError));
  test('a cursor from another sort is refused', () => {
    const raw = encodeCursor({ sort: 'email', dir: 'asc', value: 'a@b.co', id });
    expect(() => decodeCursor(raw, 'createdAt', 'desc')).toThrow(AppError);
  });
});

describe('cursor dates', () => {
  const cursorAt = (value: string) => encodeCursor({ sort: 'createdAt', dir: 'desc', value, id });
  test.each([
    '9999-99-99 99:99:99',
    '2026-02-30 10:00:00+00',
    '2025-02-29 10:00:00+00',
    '0000-01-01 00:00:00+00',
    '2026-01-01 24:00:00+00',
    '2026-01-01 10:00:00+99',
  ])('an impossible date is a 400 (%s)', (value) =>
    expect(() => decodeCursor(cursorAt(value), 'createdAt', 'desc')).toThrow(AppError),
  );
  test.each(['2024-02-29 23:59:59.999999+00', '2026-12-31T00:00:00Z', '2026-06-01 10:00:00-05:30'])(
    'a real date is kept (%s)',
    (value) => {
      expect(decodeCursor(cursorAt(value), 'createdAt', 'desc').value).toBe(value);
    },
  );
  test('a sort value with NUL is a 400', () => {
    const raw = encodeCursor({ sort: 'email', dir: 'asc', value: 'a\u0000@b.co', id });
    expect(() => decodeCursor(raw, 'email', 'asc')).toThrow(AppError);
  });
});
