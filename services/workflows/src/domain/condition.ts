import { z } from 'zod';

// CONDITION steps: a filter tree (SPEC.md "Filter tree", operator names of DESIGN.md) evaluated
// here over one contact and the execution's trigger event and context, not over the contacts table.
// Fields: email, subscribed, createdAt, updatedAt, data.<path> (the contact's data),
// event.name, event.data.<path> (the triggering event), context.<path> (the execution context).

const OPERATORS = {
  equals: 'equals',
  notequals: 'notEquals',
  contains: 'contains',
  notcontains: 'notContains',
  greaterthan: 'greaterThan',
  gt: 'greaterThan',
  lessthan: 'lessThan',
  lt: 'lessThan',
  greaterthanorequal: 'greaterThanOrEqual',
  gte: 'greaterThanOrEqual',
  lessthanorequal: 'lessThanOrEqual',
  lte: 'lessThanOrEqual',
  exists: 'exists',
  notexists: 'notExists',
  within: 'within',
  olderthan: 'olderThan',
} as const;
type Operator = (typeof OPERATORS)[keyof typeof OPERATORS];

const FIELD = /^(email|subscribed|createdAt|updatedAt|event\.name|(data|event\.data|context)\.[^.\s][^\s]*)$/;
const UNIT_MS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000 } as const;

const filter = z
  .object({
    field: z
      .string()
      .max(1000)
      .regex(
        FIELD,
        'Use email, subscribed, createdAt, updatedAt, data.<key>, event.name, event.data.<key> or context.<key>',
      ),
    operator: z.string().transform((o, ctx) => {
      const op = OPERATORS[o.toLowerCase() as keyof typeof OPERATORS];
      if (!op) ctx.addIssue({ code: 'custom', message: `Operator ${o} is not supported in CONDITION steps` });
      return op as Operator;
    }),
    value: z.union([z.string().max(10_000), z.number(), z.boolean()]).optional(),
    unit: z.enum(['minutes', 'hours', 'days']).optional(),
  })
  .strict()
  .superRefine((f, ctx) => {
    if (f.operator === 'exists' || f.operator === 'notExists') return;
    if (f.value === undefined)
      ctx.addIssue({ code: 'custom', path: ['value'], message: `${f.operator} needs a value` });
    if ((f.operator === 'within' || f.operator === 'olderThan') && typeof f.value !== 'number') {
      ctx.addIssue({ code: 'custom', path: ['value'], message: `${f.operator} needs a number of units` });
    }
  });

export interface Filter {
  field: string;
  operator: Operator;
  value?: string | number | boolean;
  unit?: keyof typeof UNIT_MS;
}
export interface FilterTree {
  logic: 'AND' | 'OR';
  groups: { filters: Filter[]; conditions?: FilterTree }[];
}

export const conditionSchema: z.ZodType<FilterTree, z.ZodTypeDef, unknown> = z.lazy(() =>
  z
    .object({
      logic: z
        .string()
        .transform((l) => l.toUpperCase())
        .pipe(z.enum(['AND', 'OR']))
        .default('AND'),
      groups: z
        .array(
          z.object({ filters: z.array(filter).max(50).default([]), conditions: conditionSchema.optional() }).strict(),
        )
        .min(1)
        .max(50),
    })
    .strict(),
);

export interface ConditionInput {
  contact: { email: string; subscribed: boolean; data: Record<string, unknown>; createdAt?: Date; updatedAt?: Date };
  event?: { name: string; data: Record<string, unknown> };
  context: Record<string, unknown>;
}

function path(root: unknown, keys: string[]): unknown {
  let v = root;
  for (const k of keys) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function fieldValue(field: string, input: ConditionInput): unknown {
  const c = input.contact;
  if (field === 'email') return c.email.toLowerCase();
  if (field === 'subscribed') return c.subscribed;
  if (field === 'createdAt') return c.createdAt?.toISOString();
  if (field === 'updatedAt') return c.updatedAt?.toISOString();
  if (field === 'event.name') return input.event?.name;
  if (field.startsWith('data.')) return path(c.data, field.slice(5).split('.'));
  if (field.startsWith('event.data.')) return path(input.event?.data, field.slice(11).split('.'));
  if (field.startsWith('context.')) return path(input.context, field.slice(8).split('.'));
  return undefined;
}

const num = (v: unknown): number | undefined => {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
};
const time = (v: unknown): number | undefined => (typeof v === 'string' ? Date.parse(v) : Number.NaN) || undefined;

/** Loose equality the way users write filters: "5" equals 5, "true" equals true, emails ignore case. */
function same(actual: unknown, expected: unknown, field: string): boolean {
  if (actual === undefined || actual === null) return false;
  if (field === 'email' && typeof expected === 'string') return actual === expected.toLowerCase();
  if (typeof actual === typeof expected) return actual === expected;
  if (typeof actual === 'number' || typeof expected === 'number') return num(actual) === num(expected);
  return String(actual) === String(expected);
}

function test(f: Filter, input: ConditionInput, now: number): boolean {
  const actual = fieldValue(f.field, input);
  const present = actual !== undefined && actual !== null && actual !== '';
  switch (f.operator) {
    case 'exists':
      return present;
    case 'notExists':
      return !present;
    case 'equals':
      return same(actual, f.value, f.field);
    case 'notEquals':
      return !same(actual, f.value, f.field);
    case 'contains':
    case 'notContains': {
      const has = Array.isArray(actual)
        ? actual.some((a) => same(a, f.value, f.field))
        : present && String(actual).toLowerCase().includes(String(f.value).toLowerCase());
      return f.operator === 'contains' ? has : !has;
    }
    case 'within':
    case 'olderThan': {
      const t = time(actual);
      if (t === undefined) return false;
      const limit = now - Number(f.value) * UNIT_MS[f.unit ?? 'days'];
      return f.operator === 'within' ? t >= limit : t < limit;
    }
    default: {
      const [a, b] = [num(actual), num(f.value)];
      if (a === undefined || b === undefined) return false;
      if (f.operator === 'greaterThan') return a > b;
      if (f.operator === 'lessThan') return a < b;
      if (f.operator === 'greaterThanOrEqual') return a >= b;
      return a <= b;
    }
  }
}

/** Inside a group, filters and the nested conditions are ANDed; `logic` joins the groups. */
export function evaluateCondition(tree: FilterTree, input: ConditionInput, now = Date.now()): boolean {
  const group = (g: FilterTree['groups'][number]) =>
    g.filters.every((f) => test(f, input, now)) && (!g.conditions || evaluateCondition(g.conditions, input, now));
  return tree.logic === 'OR' ? tree.groups.some(group) : tree.groups.every(group);
}

/** The fields a tree reads (for GET /contacts/fields/{field}/usage style lookups). */
export function conditionFields(tree: FilterTree): string[] {
  return tree.groups.flatMap((g) => [
    ...g.filters.map((f) => f.field),
    ...(g.conditions ? conditionFields(g.conditions) : []),
  ]);
}
