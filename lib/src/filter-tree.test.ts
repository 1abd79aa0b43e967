import { AppError, type FieldError } from '@svc/lib/errors';
import { filterTreeFields, parseFilterField, parseFilterTree, treeFilters } from './filter-tree.js';

const SEGMENT_ID = '3f1c2a9e-5b7d-4c1e-9a2b-0d4e6f8a1b2c';

const tree = (...filters: unknown[]) => ({ logic: 'AND', groups: [{ filters }] });

function fieldErrorsOf(input: unknown, prefix?: string): FieldError[] {
  try {
    parseFilterTree(input, prefix);
  } catch (err) {
    if (err instanceof AppError && err.status === 422) return err.errors ?? [];
    throw err;
  }
  throw new Error('expected a 422');
}

describe('parseFilterTree: shape', () => {
  test('SPEC.md example: logic AND with an equals filter on data parses unchanged', () => {
    expect(parseFilterTree(tree({ field: 'data.plan', operator: 'equals', value: 'pro' }))).toEqual({
      logic: 'AND',
      groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }],
    });
  });

  test('logic is AND or OR, case-insensitive, defaulting to AND', () => {
    expect(parseFilterTree({ logic: 'or', groups: [] }).logic).toBe('OR');
    expect(parseFilterTree({ groups: [] }).logic).toBe('AND');
    expect(fieldErrorsOf({ logic: 'XOR', groups: [] })).toEqual([
      expect.objectContaining({ field: 'condition.logic' }),
    ]);
  });

  test('a group may carry a nested conditions tree', () => {
    const parsed = parseFilterTree({
      groups: [
        {
          filters: [],
          conditions: {
            logic: 'OR',
            groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: true }] }],
          },
        },
      ],
    });
    expect(parsed.groups[0].conditions).toEqual({
      logic: 'OR',
      groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: true }] }],
    });
  });

  test('groups and filters are required arrays (a typo never widens the audience to everyone)', () => {
    expect(fieldErrorsOf({ logic: 'AND' })).toEqual([expect.objectContaining({ field: 'condition.groups' })]);
    expect(fieldErrorsOf({ groups: [{ filter: [] }] })).toEqual([
      expect.objectContaining({ field: 'condition.groups.0.filters' }),
    ]);
    expect(fieldErrorsOf('AND')).toEqual([expect.objectContaining({ field: 'condition', code: 'invalid_type' })]);
  });

  test('errors name the failing path under the given field prefix', () => {
    const input = tree({ field: 'email', operator: 'equals', value: 'a@b.co' }, { field: 'email', operator: 'bogus' });
    expect(fieldErrorsOf(input)).toEqual([
      expect.objectContaining({ field: 'condition.groups.0.filters.1.operator', code: 'invalid_operator' }),
    ]);
    expect(fieldErrorsOf(input, 'audienceCondition')[0].field).toBe('audienceCondition.groups.0.filters.1.operator');
  });

  test('trees nest at most 5 levels deep', () => {
    const nest = (levels: number): unknown =>
      levels === 1 ? { groups: [] } : { groups: [{ filters: [], conditions: nest(levels - 1) }] };
    expect(() => parseFilterTree(nest(5))).not.toThrow();
    expect(fieldErrorsOf(nest(6))).toEqual([
      expect.objectContaining({
        field: 'condition' + '.groups.0.conditions'.repeat(5),
        code: 'too_big',
      }),
    ]);
  });

  test('a tree holds at most 50 filters in total', () => {
    const filter = { field: 'subscribed', operator: 'equals', value: true };
    const fifty = {
      groups: [{ filters: Array(25).fill(filter), conditions: { groups: [{ filters: Array(25).fill(filter) }] } }],
    };
    expect(() => parseFilterTree(fifty)).not.toThrow();
    fifty.groups[0].filters.push(filter);
    expect(fieldErrorsOf(fifty)).toEqual([expect.objectContaining({ field: 'condition', code: 'too_big' })]);
  });
});

describe('parseFilterTree: operators', () => {
  test('gt, lt, gte and lte are aliases of the comparison operators', () => {
    const parsed = parseFilterTree(
      tree(
        { field: 'data.n', operator: 'gt', value: 1 },
        { field: 'data.n', operator: 'lt', value: 1 },
        { field: 'data.n', operator: 'gte', value: 1 },
        { field: 'data.n', operator: 'lte', value: 1 },
      ),
    );
    expect(parsed.groups[0].filters.map((f) => f.operator)).toEqual([
      'greaterThan',
      'lessThan',
      'greaterThanOrEqual',
      'lessThanOrEqual',
    ]);
  });

  test('within and olderThan need a positive number; unit is minutes, hours or days and defaults to days', () => {
    expect(parseFilterTree(tree({ field: 'createdAt', operator: 'within', value: 7 })).groups[0].filters[0]).toEqual({
      field: 'createdAt',
      operator: 'within',
      value: 7,
      unit: 'days',
    });
    expect(
      parseFilterTree(tree({ field: 'data.seen', operator: 'olderThan', value: '90', unit: 'Minutes' })).groups[0]
        .filters[0],
    ).toEqual({
      field: 'data.seen',
      operator: 'olderThan',
      value: 90,
      unit: 'minutes',
    });
    expect(fieldErrorsOf(tree({ field: 'createdAt', operator: 'within', value: 0 }))[0]).toMatchObject({
      field: 'condition.groups.0.filters.0.value',
    });
    expect(fieldErrorsOf(tree({ field: 'createdAt', operator: 'within', value: 'soon' }))[0].code).toBe(
      'invalid_value',
    );
    expect(fieldErrorsOf(tree({ field: 'createdAt', operator: 'within', value: 1, unit: 'weeks' }))[0]).toMatchObject({
      field: 'condition.groups.0.filters.0.unit',
      code: 'invalid_unit',
    });
  });

  test('within, olderThan and triggered* reject intervals beyond 100 years', () => {
    expect(fieldErrorsOf(tree({ field: 'event.login', operator: 'triggeredWithin', value: 40000 }))[0].code).toBe(
      'too_big',
    );
  });

  test('within and olderThan apply to createdAt, updatedAt and data fields only', () => {
    expect(fieldErrorsOf(tree({ field: 'email', operator: 'within', value: 1 }))[0]).toMatchObject({
      field: 'condition.groups.0.filters.0.operator',
      code: 'invalid_operator',
    });
    expect(fieldErrorsOf(tree({ field: 'event.login', operator: 'olderThan', value: 1 }))[0].code).toBe(
      'invalid_operator',
    );
  });

  test('triggered operators apply only to event.<name> and email.<activity> fields', () => {
    const ok = parseFilterTree(
      tree(
        { field: 'event.signup', operator: 'triggered' },
        { field: 'email.open', operator: 'triggeredWithin', value: 3, unit: 'hours' },
        { field: 'event.purchase', operator: 'triggeredOlderThan', value: 30 },
        { field: 'email.click', operator: 'notTriggered', value: 'ignored' },
        { field: 'event.login', operator: 'notTriggeredWithin', value: 14 },
      ),
    );
    expect(ok.groups[0].filters[3]).toEqual({ field: 'email.click', operator: 'notTriggered' });
    expect(fieldErrorsOf(tree({ field: 'data.plan', operator: 'triggered' }))[0].code).toBe('invalid_operator');
    expect(fieldErrorsOf(tree({ field: 'event.login', operator: 'equals', value: 1 }))[0].code).toBe(
      'invalid_operator',
    );
    expect(fieldErrorsOf(tree({ field: 'event.login', operator: 'triggeredWithin' }))[0].field).toBe(
      'condition.groups.0.filters.0.value',
    );
  });

  test('email.<activity> is one of sent, delivery, open, click, bounce, complaint', () => {
    for (const activity of ['sent', 'delivery', 'open', 'click', 'bounce', 'complaint']) {
      expect(() => parseFilterTree(tree({ field: `email.${activity}`, operator: 'triggered' }))).not.toThrow();
    }
    expect(fieldErrorsOf(tree({ field: 'email.opened', operator: 'triggered' }))[0]).toMatchObject({
      field: 'condition.groups.0.filters.0.field',
      code: 'invalid_field',
    });
  });

  test('memberOfSegment takes field segment.<id> or a segment id as value, normalised to segment.<id>', () => {
    const parsed = parseFilterTree(
      tree(
        { field: `segment.${SEGMENT_ID}`, operator: 'memberOfSegment' },
        { field: 'segment', operator: 'notMemberOfSegment', value: SEGMENT_ID.toUpperCase() },
      ),
    );
    expect(parsed.groups[0].filters).toEqual([
      { field: `segment.${SEGMENT_ID}`, operator: 'memberOfSegment' },
      { field: `segment.${SEGMENT_ID}`, operator: 'notMemberOfSegment' },
    ]);
    expect(fieldErrorsOf(tree({ field: 'segment', operator: 'memberOfSegment', value: 'vip' }))[0].code).toBe(
      'invalid_value',
    );
    expect(fieldErrorsOf(tree({ field: `segment.${SEGMENT_ID}`, operator: 'equals', value: 1 }))[0].code).toBe(
      'invalid_operator',
    );
  });

  test('exists and notExists need no value', () => {
    expect(parseFilterTree(tree({ field: 'data.plan', operator: 'exists', value: 'x' })).groups[0].filters[0]).toEqual({
      field: 'data.plan',
      operator: 'exists',
    });
  });

  test('comparisons need a number or a date on data fields, a date on createdAt/updatedAt', () => {
    expect(() => parseFilterTree(tree({ field: 'data.n', operator: 'greaterThan', value: 10 }))).not.toThrow();
    expect(
      parseFilterTree(tree({ field: 'data.n', operator: 'greaterThan', value: '10' })).groups[0].filters[0].value,
    ).toBe(10);
    expect(() => parseFilterTree(tree({ field: 'data.d', operator: 'lessThan', value: '2024-01-01' }))).not.toThrow();
    expect(() =>
      parseFilterTree(tree({ field: 'updatedAt', operator: 'gte', value: '2024-01-01T00:00:00Z' })),
    ).not.toThrow();
    expect(fieldErrorsOf(tree({ field: 'data.n', operator: 'greaterThan', value: 'ten' }))[0].code).toBe(
      'invalid_value',
    );
    expect(fieldErrorsOf(tree({ field: 'createdAt', operator: 'greaterThan', value: 5 }))[0].code).toBe(
      'invalid_value',
    );
    expect(fieldErrorsOf(tree({ field: 'createdAt', operator: 'greaterThan', value: '2024-02-30' }))[0].code).toBe(
      'invalid_value',
    );
  });

  test('email takes only string operators and exists, compared with a string', () => {
    expect(() => parseFilterTree(tree({ field: 'email', operator: 'contains', value: '@example.com' }))).not.toThrow();
    expect(fieldErrorsOf(tree({ field: 'email', operator: 'greaterThan', value: 'a' }))[0].code).toBe(
      'invalid_operator',
    );
    expect(fieldErrorsOf(tree({ field: 'email', operator: 'equals', value: 3 }))[0].code).toBe('invalid_value');
  });

  test('subscribed takes equals or notEquals with a boolean', () => {
    expect(
      parseFilterTree(tree({ field: 'subscribed', operator: 'equals', value: 'false' })).groups[0].filters[0].value,
    ).toBe(false);
    expect(fieldErrorsOf(tree({ field: 'subscribed', operator: 'equals', value: 'maybe' }))[0].code).toBe(
      'invalid_value',
    );
    expect(fieldErrorsOf(tree({ field: 'subscribed', operator: 'contains', value: 't' }))[0].code).toBe(
      'invalid_operator',
    );
  });

  test('fields are a standard field or data.<key>; bare custom keys are rejected', () => {
    expect(fieldErrorsOf(tree({ field: 'plan', operator: 'equals', value: 'pro' }))[0]).toMatchObject({
      field: 'condition.groups.0.filters.0.field',
      code: 'invalid_field',
    });
    expect(fieldErrorsOf(tree({ field: 'data.', operator: 'exists' }))[0].code).toBe('invalid_field');
  });
});

describe('parseFilterField', () => {
  test('data.<dot.path> addresses a nested key', () => {
    expect(parseFilterField('data.profile.tier')).toEqual({ kind: 'data', path: ['profile', 'tier'] });
  });

  test('event.<name> keeps dots inside the event name', () => {
    expect(parseFilterField('event.segment.vip.entry')).toEqual({ kind: 'event', name: 'segment.vip.entry' });
  });
});

describe('parseFilterTree: size bounds', () => {
  test('a data path of more than 10 keys, or a key over 255 characters, is an unknown field', () => {
    expect(() =>
      parseFilterTree(tree({ field: `data.${Array(10).fill('a').join('.')}`, operator: 'exists' })),
    ).not.toThrow();
    expect(fieldErrorsOf(tree({ field: `data.${Array(11).fill('a').join('.')}`, operator: 'exists' }))[0].code).toBe(
      'invalid_field',
    );
    expect(fieldErrorsOf(tree({ field: `data.${'k'.repeat(256)}`, operator: 'exists' }))[0].code).toBe('invalid_field');
    expect(fieldErrorsOf(tree({ field: `event.${'e'.repeat(256)}`, operator: 'triggered' }))[0].code).toBe(
      'invalid_field',
    );
  });

  test('a field of 10,000 segments is refused without echoing it', () => {
    const [error] = fieldErrorsOf(tree({ field: `data.${Array(10_000).fill('a').join('.')}`, operator: 'exists' }));
    expect(error).toMatchObject({ field: 'condition.groups.0.filters.0.field', code: 'too_big' });
    expect(error.message.length).toBeLessThan(200);
  });

  test('a tree holds at most 50 groups, counted before the schema walks it', () => {
    expect(() => parseFilterTree({ groups: Array(50).fill({ filters: [] }) })).not.toThrow();
    expect(fieldErrorsOf({ groups: Array(10_000).fill({ filters: [] }) })).toEqual([
      expect.objectContaining({ field: 'condition', code: 'too_big' }),
    ]);
  });
});

describe('walking a tree', () => {
  const nested = {
    logic: 'OR',
    groups: [
      {
        filters: [{ field: 'email', operator: 'exists' }],
        conditions: { groups: [{ filters: [{ field: 'data.a.b', operator: 'equals', value: 1 }] }] },
      },
      { filters: [{ field: 'subscribed', operator: 'equals', value: true }] },
    ],
  };

  test('treeFilters: every filter of a parsed tree, a group before the next, nested conditions included', () => {
    expect(treeFilters(parseFilterTree(nested)).map((f) => f.field)).toEqual(['email', 'data.a.b', 'subscribed']);
  });

  test('filterTreeFields: the same fields from stored JSON, and nothing from other shapes', () => {
    expect(filterTreeFields(nested)).toEqual(['email', 'data.a.b', 'subscribed']);
    expect(filterTreeFields(null)).toEqual([]);
    expect(filterTreeFields('data.x')).toEqual([]);
  });
});
