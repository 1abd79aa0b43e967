import { compileFilter, SqlParams } from './filter-sql.js';
import { parseFilterTree } from '@svc/lib/filter-tree';

const PROJECT = '11111111-1111-4111-8111-111111111111';
const SEGMENT_ID = '3f1c2a9e-5b7d-4c1e-9a2b-0d4e6f8a1b2c';

function compile(...filters: unknown[]) {
  const params = new SqlParams([PROJECT]);
  const sql = compileFilter(parseFilterTree({ logic: 'AND', groups: [{ filters }] }), params);
  return { sql, values: params.values };
}

describe('SqlParams', () => {
  test('values bound at construction keep their numbers; added values continue from there', () => {
    const params = new SqlParams(['p']);
    expect(params.add('a')).toBe('$2');
    expect(params.add('b')).toBe('$3');
    expect(params.values).toEqual(['p', 'a', 'b']);
  });
});

describe('compileFilter', () => {
  test('an empty tree matches every contact', () => {
    expect(compileFilter(parseFilterTree({ groups: [] }), new SqlParams())).toBe('TRUE');
  });

  test('filters in a group are ANDed with the nested conditions; groups combine by the tree logic', () => {
    const params = new SqlParams([PROJECT]);
    const sql = compileFilter(
      parseFilterTree({
        logic: 'OR',
        groups: [
          {
            filters: [{ field: 'subscribed', operator: 'equals', value: true }],
            conditions: {
              logic: 'OR',
              groups: [
                { filters: [{ field: 'email', operator: 'equals', value: 'a@x.io' }] },
                { filters: [{ field: 'email', operator: 'equals', value: 'b@x.io' }] },
              ],
            },
          },
          { filters: [{ field: 'event.signup', operator: 'triggered' }] },
        ],
      }),
      params,
    );
    expect(sql).toBe(
      '(((c.subscribed = $2::boolean) AND ((lower(c.email) = lower($3)) OR (lower(c.email) = lower($4)))) OR ' +
        '(EXISTS (SELECT 1 FROM events f_act WHERE f_act.project_id = c.project_id AND f_act.contact_id = c.id ' +
        'AND f_act.name = $5)))',
    );
    expect(params.values).toEqual([PROJECT, true, 'a@x.io', 'b@x.io', 'signup']);
  });

  test('email compares case-insensitively; contains is ILIKE with % and _ escaped', () => {
    expect(compile({ field: 'email', operator: 'contains', value: '50%_off\\' })).toEqual({
      sql: '(c.email ILIKE $2)',
      values: [PROJECT, '%50\\%\\_off\\\\%'],
    });
    expect(compile({ field: 'email', operator: 'notEquals', value: 'A@X.io' }).sql).toBe(
      '(lower(c.email) <> lower($2))',
    );
  });

  test('equals on data uses jsonb containment of the nested object so the GIN index serves it', () => {
    expect(compile({ field: 'data.profile.tier', operator: 'equals', value: 'gold' })).toEqual({
      sql: '(c.data @> $2::jsonb)',
      values: [PROJECT, '{"profile":{"tier":"gold"}}'],
    });
  });

  test('with a managed index, string equality compiles to its expression: -> per bound key, cut to 200', () => {
    const params = new SqlParams([PROJECT], new Map(), (kind) => kind === 'text');
    const tree = parseFilterTree({
      logic: 'AND',
      groups: [{ filters: [{ field: 'data.profile.tier', operator: 'equals', value: 'gold' }] }],
    });
    const value = '(c.data -> $2::text -> $3::text)';
    expect(compileFilter(tree, params)).toBe(
      `(CASE WHEN jsonb_typeof(${value}) = 'string' THEN left(${value} #>> '{}', 200) END = $4::text)`,
    );
    expect(params.values).toEqual([PROJECT, 'profile', 'tier', 'gold']);
    // A value as long as the cut also compares the whole value; numbers and booleans keep containment.
    const long = 'ü'.repeat(200);
    const longParams = new SqlParams([PROJECT], new Map(), () => true);
    const longSql = compileFilter(
      parseFilterTree({
        logic: 'AND',
        groups: [{ filters: [{ field: 'data.tier', operator: 'notEquals', value: long }] }],
      }),
      longParams,
    );
    expect(longSql).toContain(`= $4::text AND (c.data -> $3::text) = $5::jsonb)`);
    expect(longParams.values.slice(1)).toEqual(['tier', 'tier', long, JSON.stringify(long)]);
    expect(longSql).toMatch(/^\(NOT COALESCE\(/);
    const number = compileFilter(
      parseFilterTree({ logic: 'AND', groups: [{ filters: [{ field: 'data.seats', operator: 'equals', value: 3 }] }] }),
      new SqlParams([PROJECT], new Map(), () => true),
    );
    expect(number).toBe('(c.data @> $2::jsonb)');
  });

  test('with a managed index, within/olderThan compare its instant with the cutoff inline (an index condition)', () => {
    const params = new SqlParams([PROJECT], new Map(), (kind) => kind === 'instant');
    const tree = parseFilterTree({
      logic: 'AND',
      groups: [{ filters: [{ field: 'data.seen', operator: 'olderThan', value: 2 }] }],
    });
    const sql = compileFilter(tree, params);
    expect(sql).toMatch(
      /^\(\(CASE WHEN .* AT TIME ZONE 'UTC' END\) < now\(\) - make_interval\(secs => \$3::double precision\)\)$/,
    );
    expect(sql).not.toContain('::timestamptz');
    expect(params.values).toEqual([PROJECT, ['seen'], 2 * 86400]);
  });

  test('data paths are bound as a text[] parameter, never interpolated', () => {
    const { sql, values } = compile({ field: "data.it's", operator: 'exists' });
    expect(sql).toBe("(jsonb_typeof((c.data #> $2::text[])) <> 'null')");
    expect(values).toEqual([PROJECT, ["it's"]]);
  });

  test('numeric comparisons on data only read values whose JSON type is number', () => {
    expect(compile({ field: 'data.seats', operator: 'gte', value: 5 })).toEqual({
      sql:
        "(CASE WHEN jsonb_typeof((c.data #> $2::text[])) = 'number' " +
        'THEN (c.data #> $2::text[])::numeric END >= $3::numeric)',
      values: [PROJECT, ['seats'], 5],
    });
  });

  test('within on data only casts validated texts near the cutoff; bounds computed once per query', () => {
    const { sql, values } = compile({ field: 'data.lastSeen', operator: 'within', value: 2, unit: 'hours' });
    const text = String.raw`\(c\.data #>> \$2::text\[\]\)`;
    const date = String.raw`${text} COLLATE "C"`;
    const day = (days: number) =>
      String.raw`\(SELECT to_char\(\(now\(\) - make_interval\(secs => \$4::double precision\)\) AT TIME ZONE 'UTC' ` +
      String.raw`\+ interval '${days} days', 'YYYY-MM-DD'\)\)`;
    expect(sql).toMatch(
      new RegExp(
        String.raw`^\(${date} >= \$3::text AND \(${date} >= ${day(-1)} AND \(CASE WHEN \(${text} ~ '\^.*\$'.* ` +
          String.raw`THEN ${date} >= ${day(2)} OR ${text}::timestamptz >= ` +
          String.raw`\(SELECT now\(\) - make_interval\(secs => \$4::double precision\)\) END\)\)\)$`,
      ),
    );
    // The constant bound (the planner's estimate, a managed index): the cutoff's UTC minute less the widest offset
    // (15 hours) and an hour of clock skew.
    expect(values).toEqual([PROJECT, ['lastSeen'], expect.any(String), 7200]);
    const bound = Date.parse(`${values[2]}Z`);
    const earliest = Date.now() - 7200_000 - 16 * 3600_000;
    expect(values[2]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/);
    expect(earliest - bound).toBeGreaterThanOrEqual(0);
    expect(earliest - bound).toBeLessThan(120_000);
  });

  test('olderThan on data has no constant bound (its set grows with time)', () => {
    const { sql, values } = compile({ field: 'data.lastSeen', operator: 'olderThan', value: 2 });
    expect(values).toEqual([PROJECT, ['lastSeen'], 2 * 86400]);
    expect(sql).not.toContain('::text AND');
  });

  test('olderThan on createdAt compares the column directly', () => {
    expect(compile({ field: 'createdAt', operator: 'olderThan', value: 30 })).toEqual({
      sql: '(c.created_at < (SELECT now() - make_interval(secs => $2::double precision)))',
      values: [PROJECT, 30 * 86400],
    });
  });

  test('createdAt comparisons take dates; a bare date means midnight UTC', () => {
    expect(compile({ field: 'createdAt', operator: 'greaterThan', value: '2024-01-01' })).toEqual({
      sql: '(c.created_at > $2::timestamptz)',
      values: [PROJECT, '2024-01-01T00:00:00Z'],
    });
  });

  test('subscribed equals takes a boolean', () => {
    expect(compile({ field: 'subscribed', operator: 'notEquals', value: false })).toEqual({
      sql: '(c.subscribed <> $2::boolean)',
      values: [PROJECT, false],
    });
  });

  test('notTriggeredWithin is NOT EXISTS an event in the interval; email.<activity> reads email_activity.type', () => {
    expect(compile({ field: 'email.open', operator: 'notTriggeredWithin', value: 10, unit: 'minutes' })).toEqual({
      sql:
        '(NOT EXISTS (SELECT 1 FROM email_activity f_act WHERE f_act.project_id = c.project_id ' +
        'AND f_act.contact_id = c.id AND f_act.type = $2 ' +
        'AND f_act.created_at >= (SELECT now() - make_interval(secs => $3::double precision))))',
      values: [PROJECT, 'open', 600],
    });
  });

  test('memberOfSegment is EXISTS in segment_members', () => {
    expect(compile({ field: `segment.${SEGMENT_ID}`, operator: 'notMemberOfSegment' })).toEqual({
      sql:
        '(NOT EXISTS (SELECT 1 FROM segment_members f_sm WHERE f_sm.segment_id = $2::uuid ' +
        'AND f_sm.contact_id = c.id AND f_sm.project_id = c.project_id))',
      values: [PROJECT, SEGMENT_ID],
    });
  });

  test('the table alias is configurable and must be a plain identifier', () => {
    const params = new SqlParams();
    expect(
      compileFilter(
        parseFilterTree({ groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: true }] }] }),
        params,
        'x',
      ),
    ).toBe('(x.subscribed = $1::boolean)');
    expect(() => compileFilter(parseFilterTree({ groups: [] }), params, 'c; DROP TABLE contacts')).toThrow();
  });
});
