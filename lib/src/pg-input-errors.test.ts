import { databaseInputError } from './pg-input-errors.js';
import { fromConnectError, toConnectError } from './rpc-errors.js';
import { validationError } from './errors.js';

const pgError = (code: string) => Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code });

describe('value-caused PostgreSQL errors', () => {
  test.each(['22021', '22P05', '22003', '22008', '22P02'])(
    'SQLSTATE %s is a 400 through the RPC error path',
    (code) => {
      expect(databaseInputError(pgError(code))).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
      expect(fromConnectError(toConnectError(pgError(code)))).toMatchObject({
        status: 400,
        details: { sqlState: code },
      });
    },
  );

  test('other errors are not input errors', () => {
    expect(databaseInputError(pgError('23505'))).toBeUndefined();
    expect(databaseInputError(new Error('boom'))).toBeUndefined();
    expect(fromConnectError(toConnectError(new Error('boom'))).status).toBe(500);
  });
});

describe('error echoes on the wire', () => {
  test('a 200 KB received value is shortened, a large object dropped, the 422 kept', () => {
    const huge = 'a'.repeat(200_000);
    const err = validationError([
      { field: 'email', message: 'Invalid email', code: 'invalid_string', received: huge },
      { field: 'data', message: 'too big', code: 'too_big', received: { list: Array(1000).fill('x') } },
    ]);
    const back = fromConnectError(toConnectError(err));
    expect(back.status).toBe(422);
    expect(String(back.errors![0].received).length).toBeLessThan(300);
    expect(back.errors![1]).not.toHaveProperty('received');
  });
});
