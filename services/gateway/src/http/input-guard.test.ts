import type { AppError } from '@svc/lib/errors';
import { checkJsonBody, MAX_JSON_DEPTH } from './input-guard.js';

function errorOf(body: unknown): AppError | undefined {
  try {
    checkJsonBody(body);
    return undefined;
  } catch (err) {
    return err as AppError;
  }
}

const nest = (levels: number): unknown => {
  let v: unknown = 'leaf';
  for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { a: v };
  return v;
};

describe('checkJsonBody', () => {
  test(`accepts ${MAX_JSON_DEPTH} levels and refuses one more`, () => {
    expect(errorOf(nest(MAX_JSON_DEPTH))).toBeUndefined();
    expect(errorOf(nest(MAX_JSON_DEPTH + 1))).toMatchObject({ status: 400, details: { maxDepth: MAX_JSON_DEPTH } });
  });

  test('a million levels are refused without a stack overflow', () => {
    expect(errorOf(JSON.parse('['.repeat(1_000_000) + ']'.repeat(1_000_000)))).toMatchObject({ status: 400 });
  });

  test('NUL in a value or a key is a 422 naming the field', () => {
    expect(errorOf({ to: [{ email: 'a@b.co', data: { note: 'x\u0000' } }] })?.errors?.[0]).toMatchObject({
      field: 'to.0.data.note',
      code: 'invalid_string',
    });
    expect(errorOf({ data: { 'k\u0000': 1 } })?.errors?.[0].field).toBe('data.k\\u0000');
    expect(errorOf({ text: 'line\r\nbreaks, unicode ☃ and \u0001 are fine' })).toBeUndefined();
  });

  test('a lone UTF-16 surrogate in a value or a key is a 422 naming the field; a pair is a character', () => {
    const body = JSON.parse('{"to":[{"email":"a@b.co","data":{"note":"a\\ud800b"}}]}');
    expect(errorOf(body)?.errors?.[0]).toMatchObject({ field: 'to.0.data.note', code: 'invalid_string' });
    expect(errorOf(JSON.parse('{"data":{"k\\udc00":1}}'))?.errors?.[0].field).toBe('data.k\\udc00');
    expect(errorOf(JSON.parse('["\\ud83d"]'))?.errors?.[0].field).toBe('0');
    expect(errorOf('\ud800')?.errors?.[0].field).toBe('body');
    expect(errorOf(JSON.parse('{"subject":"\\ud83d\\ude00 ok","\\ud83d\\ude00":"k"}'))).toBeUndefined();
  });

  test('a number beyond a double (JSON.parse reads 1e400 as Infinity) is a 422 naming the field', () => {
    const body = JSON.parse('{"condition":{"groups":[{"filters":[{"value":-1e400}]}]},"n":1e308}');
    expect(errorOf(body)?.errors?.[0]).toMatchObject({ field: 'condition.groups.0.filters.0.value', code: 'too_big' });
    expect(errorOf({ n: 1e308, m: -0.5 })).toBeUndefined();
  });
});
