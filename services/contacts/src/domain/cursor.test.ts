import { AppError } from '@svc/lib/errors';
import { decodeCursor, encodeCursor } from './cursor.js';

const id = '3f2b6c1e-1d2c-4c1a-9a7e-0a1b2c3d4e5f';

describe('cursor', () => {
  test('round-trips', () => {
    const c = { sort: 'createdAt', dir: 'desc', value: '2026-01-01 10:00:00.123456+00', id };
    expect(decodeCursor(encodeCursor(c), 'createdAt', 'desc')).toEqual(c);
  });
  test.each(['garbage', Buffer.from('[1,2]').toString('base64url'), Buffer.from(JSON.stringify(['createdAt', 'desc', 'x', 'not-a-uuid'])).toString('base64url')])(
    'a forged cursor is a 400 (%s)',
    (raw) => expect(() => decodeCursor(raw, 'createdAt', 'desc')).toThrow(AppError),
  );
  test('a cursor from another sort is refused', () => {
    const raw = encodeCursor({ sort: 'email', dir: 'asc', value: 'a@b.co', id });
    expect(() => decodeCursor(raw, 'createdAt', 'desc')).toThrow(AppError);
  });
});
