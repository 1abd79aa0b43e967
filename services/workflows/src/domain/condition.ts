import { z } from 'zod';
import { contactFieldValue, evaluateFilterTree, readPath, type FilterContact } from '@svc/lib/filter-eval';
import {
  MAX_FIELD_LENGTH,
  MAX_FILTERS,
  MAX_GROUPS,
  OPERATORS_BY_FIELD,
  resolveOperator,
  UNITS,
  type FilterOperator,
  type FilterTree as Tree,
} from '@svc/lib/filter-tree';

// CONDITION steps: a filter tree (lib/src/filter-tree.ts: SPEC.md "Filter tree", operator names of DESIGN.md)
// evaluated by its JavaScript back end (lib/src/filter-eval.ts) over one contact and the execution's trigger
// event and context, not over the contacts table.
// Fields: email, subscribed, createdAt, updatedAt, data.<path> (the contact's data),
// event.name, event.data.<path> (the triggering event), context.<path> (the execution context).
// Operators: those a data field takes (text, comparison, presence, age).

const FIELD = /^(email|subscribed|createdAt|updatedAt|event\.name|(data|event\.data|context)\.[^.\s][^\s]*)$/;
const STEP_OPERATORS: readonly FilterOperator[] = OPERATORS_BY_FIELD.data;

const filter = z
  .object({
    field: z
      .string()
      .max(MAX_FIELD_LENGTH)
      .regex(
        FIELD,
        'Use email, subscribed, createdAt, updatedAt, data.<key>, event.name, event.data.<key> or context.<key>',
      ),
    operator: z.string().transform((o, ctx) => {
      const op = resolveOperator(o);
      if (!op || !STEP_OPERATORS.includes(op))
        ctx.addIssue({ code: 'custom', message: `Operator ${o} is not supported in CONDITION steps` });
      return op as FilterOperator;
    }),
    value: z.union([z.string().max(10_000), z.number(), z.boolean()]).optional(),
    unit: z.enum(UNITS).optional(),
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

export type Filter = z.output<typeof filter>;
export type FilterTree = Tree<Filter>;

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
          z
            .object({
              filters: z.array(filter).max(MAX_FILTERS).default([]),
              conditions: conditionSchema.optional(),
            })
            .strict(),
        )
        .min(1)
        .max(MAX_GROUPS),
    })
    .strict(),
);

export interface ConditionInput {
  contact: FilterContact;
  event?: { name: string; data: Record<string, unknown> };
  context: Record<string, unknown>;
}

function fieldValue(field: string, input: ConditionInput): unknown {
  if (field === 'event.name') return input.event?.name;
  if (field.startsWith('event.data.')) return readPath(input.event?.data, field.slice(11).split('.'));
  if (field.startsWith('context.')) return readPath(input.context, field.slice(8).split('.'));
  return contactFieldValue(input.contact, field);
}

/** Inside a group, filters and the nested conditions are ANDed; `logic` joins the groups. */
export function evaluateCondition(tree: FilterTree, input: ConditionInput, now = Date.now()): boolean {
  return evaluateFilterTree(tree, (field) => fieldValue(field, input), now);
}
