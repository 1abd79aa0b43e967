import { AppError } from '@svc/lib/errors';
import { MAX_CSV_COLUMNS, checkRepeatedColumns, rowToContact, typeCsvCell, validateCsvHeader } from './csv-typing.js';

describe('typeCsvCell', () => {
  test('cells are trimmed and an empty cell is ignored (undefined)', () => {
    expect(typeCsvCell('  Paris ')).toBe('Paris');
    expect(typeCsvCell('')).toBeUndefined();
    expect(typeCsvCell('   ')).toBeUndefined();
  });

  test('true, false, yes, no (case-insensitive) are stored as booleans', () => {
    expect([typeCsvCell('true'), typeCsvCell('YES'), typeCsvCell('False'), typeCsvCell('no')]).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });

  test('plain integers and decimals are stored as numbers', () => {
    expect([
      typeCsvCell('42'),
      typeCsvCell('-7'),
      typeCsvCell('3.25'),
      typeCsvCell('0'),
      typeCsvCell('0.5'),
      typeCsvCell('-0.5'),
    ]).toEqual([42, -7, 3.25, 0, 0.5, -0.5]);
  });

  test('values with a leading zero, a plus sign or scientific notation stay strings', () => {
    for (const s of ['007', '0123', '+33', '+1.5', '1e5', '2E-3', '00.5', '1.', '.5', '1,000']) {
      expect(typeCsvCell(s)).toBe(s);
    }
  });

  test('any other text stays a string, including names of Object.prototype members', () => {
    expect(typeCsvCell('constructor')).toBe('constructor');
    expect(typeCsvCell('toString')).toBe('toString');
  });

  test('integers too long to store exactly as a number stay strings', () => {
    expect(typeCsvCell('12345678901234567890')).toBe('12345678901234567890');
  });

  test('ISO 8601 dates stay strings (type inference types them as dates)', () => {
    expect(typeCsvCell('2024-05-01')).toBe('2024-05-01');
    expect(typeCsvCell('2024-05-01T10:00:00Z')).toBe('2024-05-01T10:00:00Z');
  });
});

describe('validateCsvHeader', () => {
  test('the email column is required: a header without one is a 400', () => {
    let caught: unknown;
    try {
      validateCsvHeader(['name', 'plan']);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect(caught).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
  });

  test('a data column named twice (trimmed) is a 400 naming it; dropped and differently cased ones are not', () => {
    expect(() => checkRepeatedColumns(['email', 'plan', ' plan'])).toThrow(
      expect.objectContaining({ status: 400, message: 'The CSV header names the column "plan" twice' }),
    );
    expect(() => checkRepeatedColumns(['email', 'Plan', 'plan', 'id', 'id', '', ''])).not.toThrow();
  });

  test('a column beside one nested in it (a and a.b, either order) is a 400 naming both', () => {
    expect(() => checkRepeatedColumns(['email', 'profile', 'profile.tier'])).toThrow(
      'The CSV columns "profile" and "profile.tier" both write data.profile',
    );
    expect(() => checkRepeatedColumns(['profile.tier.level', 'email', 'profile'])).toThrow(
      'The CSV columns "profile" and "profile.tier.level" both write data.profile',
    );
    expect(() => checkRepeatedColumns(['email', 'profile.tier', 'profile.plan', 'profile..x', 'pro'])).not.toThrow();
  });

  test('the email column matches case-insensitively, trimmed, after a UTF-8 BOM', () => {
    expect(() => validateCsvHeader(['\uFEFF Email ', 'plan'])).not.toThrow();
  });
});

describe('rowToContact', () => {
  test('every other column becomes a data key with a typed value', () => {
    expect(rowToContact(['email', 'plan', 'seats', 'vip'], ['ada@example.com', 'pro', '3', 'yes'], 2)).toEqual({
      ok: true,
      email: 'ada@example.com',
      data: { plan: 'pro', seats: 3, vip: true },
      json: '{"plan":"pro","seats":3,"vip":true}',
    });
  });

  test('a header with dots becomes a nested object (data.profile.tier)', () => {
    const row = rowToContact(['email', 'profile.tier', 'profile.since'], ['a@example.com', 'gold', '2020-01-01'], 2);
    expect(row).toMatchObject({ ok: true, data: { profile: { tier: 'gold', since: '2020-01-01' } } });
  });

  test('columns id, subscribed, createdAt, updatedAt and the generated URL variables are silently dropped', () => {
    const header = [
      'email',
      'id',
      'subscribed',
      'createdAt',
      'updatedAt',
      'svc_id',
      'svc_email',
      'unsubscribeUrl',
      'subscribeUrl',
      'manageUrl',
      'plan',
    ];
    const cells = ['a@example.com', '9', 'false', '2020-01-01', '2020-01-01', 'x', 'x', 'u', 's', 'm', 'pro'];
    expect(rowToContact(header, cells, 2)).toMatchObject({ ok: true, email: 'a@example.com', data: { plan: 'pro' } });
  });

  test('empty cells do not overwrite stored data (they are left out of the patch)', () => {
    expect(rowToContact(['email', 'plan', 'city'], ['a@example.com', '', 'Paris'], 2)).toMatchObject({
      data: { city: 'Paris' },
    });
    expect(rowToContact(['email', 'plan'], ['a@example.com'], 2)).toMatchObject({ data: {} });
  });

  test('an invalid email is reported with its row and reason invalid_email', () => {
    expect(rowToContact(['name', 'EMAIL'], ['Ada', 'not-an-email'], 5)).toEqual({
      ok: false,
      error: { row: 5, email: 'not-an-email', reason: 'invalid_email' },
    });
  });

  test('a missing email is reported like an invalid one', () => {
    expect(rowToContact(['email', 'plan'], ['  ', 'pro'], 3)).toEqual({
      ok: false,
      error: { row: 3, email: '', reason: 'invalid_email' },
    });
  });

  test('the email cell is trimmed and the header BOM is stripped', () => {
    expect(rowToContact(['\uFEFFemail', 'plan'], [' a@example.com ', 'pro'], 2)).toMatchObject({
      ok: true,
      email: 'a@example.com',
    });
  });

  test('a __proto__ column becomes a data key and never a prototype', () => {
    const row = rowToContact(['email', '__proto__.polluted'], ['a@example.com', 'yes'], 2);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(row.ok && JSON.stringify(row.data)).toBe('{"__proto__":{"polluted":true}}');
  });
});

describe('row limits (the API custom-data rules, per row)', () => {
  const reason = (header: string[], cells: string[]) => {
    const row = rowToContact(header, cells, 2);
    return row.ok ? 'ok' : row.error.reason;
  };

  test('a row over 64 KiB, a key over 255 characters or nesting over 10 levels fails with too_big', () => {
    expect(reason(['email', 'note'], ['a@example.com', 'x'.repeat(64 * 1024)])).toBe('too_big');
    expect(reason(['email', 'k'.repeat(256)], ['a@example.com', 'v'])).toBe('too_big');
    const deep = Array.from({ length: 11 }, (_, i) => `l${i}`).join('.');
    expect(reason(['email', deep], ['a@example.com', 'v'])).toBe('too_big');
    expect(reason(['email', 'k'.repeat(255), 'a.b.c.d.e.f.g.h.i.j'], ['a@example.com', 'v', 'w'])).toBe('ok');
  });

  test('the size counts UTF-8 bytes; a column over the key or depth rules fails only the rows that use it', () => {
    expect(reason(['email', 'note'], ['a@example.com', 'é'.repeat(33_000)])).toBe('too_big');
    expect(reason(['email', 'note'], ['a@example.com', 'é'.repeat(20_000)])).toBe('ok');
    const deep = Array.from({ length: 11 }, (_, i) => `l${i}`).join('.');
    expect(reason(['email', deep, 'k'.repeat(256), 'ok'], ['a@example.com', '', '', 'x'])).toBe('ok');
    expect(reason(['email', deep, 'k'.repeat(256), 'ok'], ['a@example.com', '', 'v', 'x'])).toBe('too_big');
    // The deep column's object is replaced by a later column's value: the row holds nothing too deep.
    expect(reason(['email', deep, 'l0'], ['a@example.com', 'v', 'w'])).toBe('ok');
  });

  test('a NUL in a used cell or column name fails the row; in an empty column it does not matter', () => {
    expect(reason(['email', 'note'], ['a@example.com', 'a\u0000b'])).toBe('invalid_character');
    expect(reason(['email', 'no\u0000te'], ['a@example.com', 'x'])).toBe('invalid_character');
    expect(reason(['email', 'no\u0000te', 'ok'], ['a@example.com', '', 'x'])).toBe('ok');
  });

  test('a reported email is cut to 320 characters and its NULs replaced, so the job can store it', () => {
    const row = rowToContact(['email'], [`${'a'.repeat(400)}\u0000@example.com`], 2);
    expect(row.ok).toBe(false);
    if (!row.ok) expect(row.error.email).toBe('a'.repeat(320));
    const nul = rowToContact(['email'], ['a\u0000@example.com'], 2);
    if (!nul.ok) expect(nul.error.email).toBe('a\uFFFD@example.com');
  });

  test(`a header over ${MAX_CSV_COLUMNS} columns is a 400`, () => {
    const columns = (n: number) => ['email', ...Array.from({ length: n }, (_, i) => `c${i}`)];
    expect(() => validateCsvHeader(columns(MAX_CSV_COLUMNS))).toThrow(/at most 1000 columns/);
    expect(() => validateCsvHeader(columns(MAX_CSV_COLUMNS - 1))).not.toThrow();
  });
});
