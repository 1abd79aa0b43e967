import { conditionSchema, evaluateCondition } from './condition.js';

const contact = {
  email: 'Ann@Example.com',
  subscribed: true,
  data: { tier: 'vip', score: 42, code: '42', profile: { city: 'Oslo' } },
};
const check = (tree: unknown, event?: Record<string, unknown>) =>
  evaluateCondition(conditionSchema.parse(tree), {
    contact,
    event: event && { name: 'purchase', data: event },
    context: { source: 'api' },
  });
const one = (field: string, operator: string, value?: unknown) => ({
  groups: [{ filters: [{ field, operator, value }] }],
});

describe('CONDITION filter trees', () => {
  test('contact fields: equals ignores email case, types are strict as in segments, nested data paths', () => {
    expect(check(one('email', 'equals', 'ann@example.com'))).toBe(true);
    expect(check(one('data.score', 'gt', 40))).toBe(true);
    expect(check(one('data.code', 'gt', 40))).toBe(false);
    expect(check(one('data.code', 'equals', 42))).toBe(false);
    expect(check(one('data.code', 'equals', '42'))).toBe(true);
    expect(check(one('data.score', 'lessThan', 40))).toBe(false);
    expect(check(one('data.profile.city', 'contains', 'os'))).toBe(true);
    expect(check(one('data.missing', 'notExists'))).toBe(true);
    expect(check(one('subscribed', 'equals', true))).toBe(true);
  });

  test('event data and context fields', () => {
    expect(check(one('event.data.amount', 'greaterThanOrEqual', 100), { amount: 100 })).toBe(true);
    expect(check(one('event.data.amount', 'greaterThan', 100), { amount: 100 })).toBe(false);
    expect(check(one('event.name', 'equals', 'purchase'), {})).toBe(true);
    expect(check(one('context.source', 'equals', 'api'))).toBe(true);
  });

  test('AND / OR over groups, nested conditions ANDed inside a group', () => {
    const tree = {
      logic: 'OR',
      groups: [
        { filters: [{ field: 'data.tier', operator: 'equals', value: 'basic' }] },
        {
          filters: [{ field: 'data.tier', operator: 'equals', value: 'vip' }],
          conditions: { groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: false }] }] },
        },
      ],
    };
    expect(check(tree)).toBe(false);
    expect(check({ ...tree, logic: 'AND' })).toBe(false);
    tree.groups[1].conditions!.groups[0].filters[0].value = true;
    expect(check(tree)).toBe(true);
  });

  test('unknown fields and operators are refused', () => {
    expect(conditionSchema.safeParse(one('segment.abc', 'equals', 'x')).success).toBe(false);
    expect(conditionSchema.safeParse(one('data.x', 'triggered')).success).toBe(false);
    expect(conditionSchema.safeParse(one('data.x', 'equals')).success).toBe(false);
  });
});
