import { randomUUID } from 'node:crypto';
import { contactFieldValue, evaluateFilterTree, type FilterContact } from '@svc/lib/filter-eval';
import { parseFilterTree } from '@svc/lib/filter-tree';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { migrations } from '../store/migrations.js';
import { compileFilter, SqlParams, type IndexedPaths } from './filter-sql.js';

// The filter tree's two back ends (lib/src/filter-tree.ts) on one table of cases: the SQL compiler (segments,
// campaign audiences) against a real PostgreSQL with contacts' own schema, and the JavaScript evaluator
// (workflows' CONDITION steps) over the same contact must give the same answer on every case, types and dates
// included, so a change to either back end that moves a case shows here.

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const PROJECT = randomUUID();
const ago = (ms: number) => new Date(Date.now() - ms);
/** The moment `ms` ago written in local time at an offset of `minutes` east of UTC (ISO 8601). */
const agoAtOffset = (ms: number, minutes: number) => {
  const local = new Date(Date.now() - ms + minutes * 60_000).toISOString().slice(0, 19);
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
};

const ann = {
  id: randomUUID(),
  email: 'Ann@Example.com',
  subscribed: true,
  createdAt: ago(2 * DAY),
  updatedAt: ago(2 * HOUR),
  data: {
    plan: 'pro',
    seats: 10,
    score: '42',
    flag: true,
    blank: '',
    tags: ['a', 'b'],
    profile: { city: 'Oslo' },
    seen: ago(DAY).toISOString(),
    day: '2024-01-01',
    offset: `${ago(DAY).toISOString().slice(0, 19)}.123456789+02:00`,
    feb30: '2023-02-30T10:00:00Z',
    // Just inside and just outside a 1-day window at the widest offsets (the constant bound of `within` is a text).
    westIn: agoAtOffset(DAY - 5 * 60_000, -(14 * 60 + 59)),
    westOut: agoAtOffset(DAY + 5 * 60_000, -(14 * 60 + 59)),
    eastIn: agoAtOffset(DAY - 5 * 60_000, 14 * 60 + 59),
    eastOut: agoAtOffset(DAY + 5 * 60_000, 14 * 60 + 59),
    // Longer than the `text` index's cut (200 characters), multi-byte characters across it.
    long: `${'é'.repeat(199)}ß${'x'.repeat(50)}`,
    nested: { items: [{ tier: 'gold' }], deep: { tier: 'gold' } },
    // Keys named like Object's own properties: a `__proto__` key as JSON.parse keeps it (an ordinary key).
    odd: JSON.parse('{"__proto__": {"tier": "gold"}, "constructor": "c"}'),
  },
};

const one = (field: string, operator: string, value?: unknown, unit?: string) => ({
  logic: 'AND',
  groups: [{ filters: [{ field, operator, value, unit }] }],
});

const AGREE: Array<[string, unknown, boolean]> = [
  ['email equals, any case', one('email', 'equals', 'ANN@example.com'), true],
  ['email notEquals', one('email', 'notEquals', 'bob@example.com'), true],
  ['email contains', one('email', 'contains', 'EXAMPLE'), true],
  ['email notContains', one('email', 'notContains', 'example'), false],
  ['email exists', one('email', 'exists'), true],
  ['subscribed equals true', one('subscribed', 'equals', true), true],
  ['subscribed equals "false"', one('subscribed', 'equals', 'false'), false],
  ['subscribed notEquals false', one('subscribed', 'notEquals', false), true],
  ['createdAt within 7 days', one('createdAt', 'within', 7, 'days'), true],
  ['createdAt within 1 day', one('createdAt', 'within', 1, 'days'), false],
  ['createdAt olderThan 24 hours', one('createdAt', 'olderThan', 24, 'hours'), true],
  ['updatedAt within 180 minutes', one('updatedAt', 'within', 180, 'minutes'), true],
  ['updatedAt olderThan 1 day', one('updatedAt', 'olderThan', 1), false],
  ['data string equals', one('data.plan', 'equals', 'pro'), true],
  ['data string equals another', one('data.plan', 'equals', 'basic'), false],
  ['data string notEquals', one('data.plan', 'notEquals', 'basic'), true],
  ['data missing notEquals', one('data.missing', 'notEquals', 'x'), true],
  ['data boolean equals', one('data.flag', 'equals', true), true],
  ['data number equals', one('data.seats', 'equals', 10), true],
  ['data nested path equals', one('data.profile.city', 'equals', 'Oslo'), true],
  ['data own __proto__ key', one('data.odd.__proto__.tier', 'equals', 'gold'), true],
  ['data own constructor key', one('data.odd.constructor', 'equals', 'c'), true],
  ["Object's constructor is no data key", one('data.constructor', 'exists'), false],
  ["Object's __proto__ is no data key", one('data.profile.__proto__', 'exists'), false],
  ["Object's toString is no data key", one('data.profile.toString', 'notExists'), true],
  ['data number gt', one('data.seats', 'gt', 5), true],
  ['data number lt', one('data.seats', 'lt', 5), false],
  ['data number greaterThanOrEqual', one('data.seats', 'greaterThanOrEqual', 10), true],
  ['data number lte', one('data.seats', 'lte', 9), false],
  ['data number gt a numeric string value', one('data.seats', 'greaterThan', '9.5'), true],
  ['data missing gt', one('data.missing', 'greaterThan', 1), false],
  ['data string contains, any case', one('data.plan', 'contains', 'PR'), true],
  ['data string notContains', one('data.plan', 'notContains', 'x'), true],
  ['data array contains an element', one('data.tags', 'contains', 'b'), true],
  ['data array notContains', one('data.tags', 'notContains', 'z'), true],
  ['data missing contains', one('data.missing', 'contains', 'x'), false],
  ['data missing notContains', one('data.missing', 'notContains', 'x'), true],
  ['data exists', one('data.plan', 'exists'), true],
  ['data missing exists', one('data.missing', 'exists'), false],
  ['data missing notExists', one('data.missing', 'notExists'), true],
  ['data object exists', one('data.profile', 'exists'), true],
  ['data date-time within 3 days', one('data.seen', 'within', 3), true],
  ['data date-time olderThan 3 days', one('data.seen', 'olderThan', 3), false],
  ['data date-time olderThan 2 hours', one('data.seen', 'olderThan', 2, 'hours'), true],
  ['data missing within', one('data.missing', 'within', 3), false],
  // Types are strict in both back ends (they once differed: the evaluator compared loosely).
  ['a numeric string is not a number', one('data.score', 'gt', 40), false],
  ['a string never equals a number', one('data.seats', 'equals', '10'), false],
  ['a number never equals a string', one('data.score', 'equals', 42), false],
  ['an array never equals one of its items', one('data.tags', 'equals', 'a'), false],
  ['an empty string exists', one('data.blank', 'exists'), true],
  ['contains reads strings and arrays, not numbers', one('data.seats', 'contains', '1'), false],
  ['createdAt compares as a date', one('createdAt', 'greaterThan', '2000-01-01'), true],
  ['updatedAt compares as a date', one('updatedAt', 'lessThan', '2000-01-01'), false],
  ['a stored date-time compares with a date value', one('data.seen', 'greaterThan', '2000-01-01'), true],
  ['a stored bare date compares as midnight UTC', one('data.day', 'greaterThanOrEqual', '2024-01-01'), true],
  ['a stored bare date before midnight UTC', one('data.day', 'lessThan', '2024-01-01T00:00:00.000Z'), false],
  ['a bare date has no age (within)', one('data.day', 'within', 3000), false],
  ['a bare date has no age (olderThan)', one('data.day', 'olderThan', 1), false],
  ['a date-time with an offset and nanoseconds', one('data.offset', 'within', 3), true],
  ['an impossible calendar date has no age', one('data.feb30', 'olderThan', 1), false],
  ['within 1 day, at offset -14:59, inside', one('data.westIn', 'within', 1), true],
  ['within 1 day, at offset -14:59, outside', one('data.westOut', 'within', 1), false],
  ['within 1 day, at offset +14:59, inside', one('data.eastIn', 'within', 1), true],
  ['within 1 day, at offset +14:59, outside', one('data.eastOut', 'within', 1), false],
  ['a number is not a date', one('data.seats', 'greaterThan', '1970-01-01'), false],
  ['a boolean equals only a boolean', one('data.flag', 'equals', 'true'), false],
  ['a long string equals itself', one('data.long', 'equals', `${'é'.repeat(199)}ß${'x'.repeat(50)}`), true],
  ['a long string never equals its first 200 characters', one('data.long', 'equals', `${'é'.repeat(199)}ß`), false],
  [
    'a long string never equals another with its prefix',
    one('data.long', 'equals', `${'é'.repeat(199)}ß${'x'.repeat(51)}`),
    false,
  ],
  ['a long string notEquals another with its prefix', one('data.long', 'notEquals', `${'é'.repeat(199)}ßy`), true],
  ['a nested string equals', one('data.nested.deep.tier', 'equals', 'gold'), true],
  ['an object never equals a string', one('data.nested.deep', 'equals', 'gold'), false],
  ['a missing nested path notEquals', one('data.nested.none.tier', 'notEquals', 'gold'), true],
  ['a non-date string has no age (within)', one('data.plan', 'within', 3), false],
  ['a non-date string has no age (olderThan)', one('data.plan', 'olderThan', 3), false],
  ['a number has no age', one('data.seats', 'within', 3000), false],
  ['an object has no age', one('data.profile', 'olderThan', 1), false],
  ['an empty group matches', { logic: 'AND', groups: [{ filters: [] }] }, true],
  [
    'OR over groups, nested conditions ANDed in a group',
    {
      logic: 'OR',
      groups: [
        { filters: [{ field: 'data.plan', operator: 'equals', value: 'basic' }] },
        {
          filters: [{ field: 'data.seats', operator: 'gt', value: 5 }],
          conditions: {
            logic: 'AND',
            groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: true }] }],
          },
        },
      ],
    },
    true,
  ],
  [
    'AND over groups, one false',
    {
      logic: 'AND',
      groups: [
        { filters: [{ field: 'email', operator: 'contains', value: 'ann' }] },
        { filters: [{ field: 'data.plan', operator: 'equals', value: 'basic' }] },
      ],
    },
    false,
  ],
];

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase('contacts_filter_backends', migrations);
  await db.pool.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [ann.id, PROJECT, ann.email, ann.subscribed, JSON.stringify(ann.data), ann.createdAt, ann.updatedAt],
  );
});

afterAll(() => db.drop());

async function bothBackEnds(input: unknown, indexed: IndexedPaths): Promise<{ js: boolean; sql: boolean }> {
  const tree = parseFilterTree(input);
  const params = new SqlParams([ann.id, PROJECT], new Map(), indexed);
  const where = compileFilter(tree, params, 'c');
  // As a WHERE reads it: NULL (unknown) does not match.
  const { rows } = await db.pool.query(
    `SELECT COALESCE(${where}, FALSE) AS matches FROM contacts c WHERE c.id = $1 AND c.project_id = $2`,
    params.values,
  );
  const contact: FilterContact = ann;
  return { js: evaluateFilterTree(tree, (field) => contactFieldValue(contact, field)), sql: rows[0].matches };
}

// The SQL compiler twice: the forms it compiles without a managed index, and those of every managed index
// (filter-indexes.ts; an index need not exist for its form to match the same contacts).
describe.each([
  ['without managed indexes', () => false],
  ['with every managed index', () => true],
] as Array<[string, IndexedPaths]>)(
  'filter tree back ends, %s: the JavaScript evaluator and the SQL compiler',
  (_label, indexed) => {
    test.each(AGREE)('agree: %s', async (_name, tree, expected) => {
      expect(await bothBackEnds(tree, indexed)).toEqual({ js: expected, sql: expected });
    });
  },
);
