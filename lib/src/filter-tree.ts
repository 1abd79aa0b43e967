import { z } from 'zod';
import { isCalendarDate } from './calendar-date.js';
import { validationError } from './errors.js';
import { fieldErrors } from './zod-errors.js';

// The filter tree (SPEC.md "Filter tree", names from DESIGN.md "Names for what SPEC.md leaves open"): its
// types, operators and their aliases, which operators each field takes, units, limits, parsing into one
// canonical form, and the walk over a tree. Two back ends evaluate it: contacts compiles it to SQL over the
// contacts table (segment conditions, campaign audiences: services/contacts/src/domain/filter-sql.ts), and
// filter-eval.ts evaluates it in JavaScript over one contact (workflows' CONDITION steps).

export const OPERATORS = [
  'equals',
  'notEquals',
  'contains',
  'notContains',
  'greaterThan',
  'lessThan',
  'greaterThanOrEqual',
  'lessThanOrEqual',
  'exists',
  'notExists',
  'within',
  'olderThan',
  'triggered',
  'triggeredWithin',
  'triggeredOlderThan',
  'notTriggered',
  'notTriggeredWithin',
  'memberOfSegment',
  'notMemberOfSegment',
] as const;
export type FilterOperator = (typeof OPERATORS)[number];

const EMAIL_ACTIVITIES = ['sent', 'delivery', 'open', 'click', 'bounce', 'complaint'] as const;
export type EmailActivity = (typeof EMAIL_ACTIVITIES)[number];

export const UNITS = ['minutes', 'hours', 'days'] as const;
export type TimeUnit = (typeof UNITS)[number];

export type FilterValue = string | number | boolean;

export interface Filter {
  field: string;
  operator: FilterOperator;
  value?: FilterValue;
  unit?: TimeUnit;
}
/** `F`: the filters' type (a back end may read a vocabulary of fields of its own, e.g. workflows' CONDITION). */
export interface FilterGroup<F = Filter> {
  filters: F[];
  conditions?: FilterTree<F>;
}
export interface FilterTree<F = Filter> {
  logic: 'AND' | 'OR';
  groups: FilterGroup<F>[];
}

/** What a filter's `field` string addresses. */
export type FilterField =
  | { kind: 'email' }
  | { kind: 'subscribed' }
  | { kind: 'timestamp'; name: 'createdAt' | 'updatedAt' }
  | { kind: 'data'; path: string[] }
  | { kind: 'event'; name: string }
  | { kind: 'emailActivity'; activity: EmailActivity }
  | { kind: 'segment'; segmentId: string };

const MAX_DEPTH = 5;
export const MAX_FILTERS = 50;
export const MAX_GROUPS = 50;
export const MAX_FIELD_LENGTH = 1000;
const MAX_OPERATOR_LENGTH = 64;
const MAX_DATA_PATH_KEYS = 10; // custom data nests at most 10 levels: a longer path matches nothing
const MAX_NAME_LENGTH = 255; // a data key or an event name
const MAX_INTERVAL_DAYS = 36525; // 100 years: keeps now() - interval far from PostgreSQL's range limits
const UNIT_DAYS: Record<TimeUnit, number> = { minutes: 1 / 1440, hours: 1 / 24, days: 1 };
/** The length of each unit. */
export const UNIT_SECONDS: Record<TimeUnit, number> = { minutes: 60, hours: 3600, days: 86400 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const OPERATOR_NAMES = new Map<string, FilterOperator>([
  ...OPERATORS.map((op) => [op.toLowerCase(), op] as const),
  ['gt', 'greaterThan'],
  ['lt', 'lessThan'],
  ['gte', 'greaterThanOrEqual'],
  ['lte', 'lessThanOrEqual'],
]);

/** An operator by any of its names (case-insensitive, `gt`/`lt`/`gte`/`lte` aliases); undefined if none. */
export const resolveOperator = (name: string): FilterOperator | undefined => OPERATOR_NAMES.get(name.toLowerCase());

const TEXT_OPS: readonly FilterOperator[] = ['equals', 'notEquals', 'contains', 'notContains'];
const COMPARE_OPS: readonly FilterOperator[] = ['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'];
const PRESENCE_OPS: readonly FilterOperator[] = ['exists', 'notExists'];
const AGE_OPS: readonly FilterOperator[] = ['within', 'olderThan'];
const TRIGGER_OPS: readonly FilterOperator[] = [
  'triggered',
  'triggeredWithin',
  'triggeredOlderThan',
  'notTriggered',
  'notTriggeredWithin',
];
const SEGMENT_OPS: readonly FilterOperator[] = ['memberOfSegment', 'notMemberOfSegment'];
const INTERVAL_OPS: readonly FilterOperator[] = [
  ...AGE_OPS,
  'triggeredWithin',
  'triggeredOlderThan',
  'notTriggeredWithin',
];

/** Which operators each kind of field takes. */
export const OPERATORS_BY_FIELD: Record<FilterField['kind'], readonly FilterOperator[]> = {
  email: [...TEXT_OPS, ...PRESENCE_OPS],
  subscribed: ['equals', 'notEquals'],
  timestamp: [...COMPARE_OPS, ...AGE_OPS],
  data: [...TEXT_OPS, ...COMPARE_OPS, ...PRESENCE_OPS, ...AGE_OPS],
  event: TRIGGER_OPS,
  emailActivity: TRIGGER_OPS,
  segment: SEGMENT_OPS,
};

/** Reads a field string; null when it names nothing a filter can address. */
export function parseFilterField(field: string): FilterField | null {
  if (field === 'email') return { kind: 'email' };
  if (field === 'subscribed') return { kind: 'subscribed' };
  if (field === 'createdAt' || field === 'updatedAt') return { kind: 'timestamp', name: field };
  const dot = field.indexOf('.');
  if (dot < 0) return null;
  const [prefix, rest] = [field.slice(0, dot), field.slice(dot + 1)];
  if (prefix === 'data') {
    const path = rest.split('.', MAX_DATA_PATH_KEYS + 1);
    const fits = path.length <= MAX_DATA_PATH_KEYS && path.every((key) => key !== '' && key.length <= MAX_NAME_LENGTH);
    return fits ? { kind: 'data', path } : null;
  }
  if (prefix === 'event')
    return rest.trim() === '' || rest.length > MAX_NAME_LENGTH ? null : { kind: 'event', name: rest };
  if (prefix === 'email') {
    const activity = EMAIL_ACTIVITIES.find((a) => a === rest);
    return activity ? { kind: 'emailActivity', activity } : null;
  }
  if (prefix === 'segment') return UUID.test(rest) ? { kind: 'segment', segmentId: rest.toLowerCase() } : null;
  return null;
}

const rawFilter = z.object({
  field: z.string().min(1).max(MAX_FIELD_LENGTH),
  operator: z.string().max(MAX_OPERATOR_LENGTH),
  value: z.unknown().optional(),
  unit: z.unknown().optional(),
});

const filterSchema = rawFilter.transform((raw, ctx): Filter => {
  const fail = (path: string, code: string, message: string) => {
    ctx.addIssue({ code: z.ZodIssueCode.custom, path: [path], message, params: { code } });
    return z.NEVER;
  };
  const operator = resolveOperator(raw.operator);
  if (!operator) return fail('operator', 'invalid_operator', `Unknown operator "${raw.operator}"`);

  if (SEGMENT_OPS.includes(operator)) {
    // Membership is written either as field `segment.<id>` or as a segment id in `value`.
    const fromField = parseFilterField(raw.field);
    const fromValue = typeof raw.value === 'string' && UUID.test(raw.value) ? raw.value.toLowerCase() : undefined;
    const segmentId = fromField?.kind === 'segment' ? fromField.segmentId : fromValue;
    if (!segmentId)
      return fail('value', 'invalid_value', `${operator} needs field segment.<id> or a segment id as value`);
    if (fromValue && fromValue !== segmentId)
      return fail('value', 'invalid_value', 'value and field name different segments');
    return { field: `segment.${segmentId}`, operator };
  }

  const field = parseFilterField(raw.field);
  if (!field) {
    const hint =
      `data.<key> (at most ${MAX_DATA_PATH_KEYS} keys of ${MAX_NAME_LENGTH} characters), ` +
      'event.<name>, email.<activity> or segment.<id>';
    return fail(
      'field',
      'invalid_field',
      `Unknown field "${raw.field}": use email, subscribed, createdAt, updatedAt, ${hint}`,
    );
  }
  if (!OPERATORS_BY_FIELD[field.kind].includes(operator)) {
    return fail('operator', 'invalid_operator', `Operator ${operator} cannot be used on field ${raw.field}`);
  }

  if (INTERVAL_OPS.includes(operator)) {
    const unit =
      raw.unit === undefined || raw.unit === null ? 'days' : UNITS.find((u) => u === String(raw.unit).toLowerCase());
    if (!unit) return fail('unit', 'invalid_unit', 'unit must be minutes, hours or days');
    const amount = toNumber(raw.value);
    if (amount === undefined || amount <= 0)
      return fail('value', 'invalid_value', `${operator} needs a positive number of ${unit}`);
    if (amount * UNIT_DAYS[unit] > MAX_INTERVAL_DAYS)
      return fail('value', 'too_big', `${operator} spans at most 100 years`);
    return { field: raw.field, operator, value: amount, unit };
  }
  if (PRESENCE_OPS.includes(operator) || TRIGGER_OPS.includes(operator)) {
    return { field: raw.field, operator }; // these take no value; one sent anyway is ignored
  }

  const value = filterValue(field, operator, raw.value);
  if (value === undefined) return fail('value', 'invalid_value', valueHint(field, operator));
  return { field: raw.field, operator, value };
});

function filterValue(field: FilterField, operator: FilterOperator, value: unknown): FilterValue | undefined {
  if (COMPARE_OPS.includes(operator)) {
    if (typeof value === 'string' && isCalendarDate(value)) return value;
    return field.kind === 'data' ? toNumber(value) : undefined;
  }
  if (operator === 'contains' || operator === 'notContains') {
    return typeof value === 'string' && value !== '' ? value : undefined;
  }
  // equals / notEquals
  if (field.kind === 'subscribed') {
    if (typeof value === 'boolean') return value;
    return value === 'true' ? true : value === 'false' ? false : undefined;
  }
  if (field.kind === 'email') return typeof value === 'string' && value !== '' ? value : undefined;
  const ok =
    typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
  return ok ? (value as FilterValue) : undefined;
}

function valueHint(field: FilterField, operator: FilterOperator): string {
  if (COMPARE_OPS.includes(operator)) {
    return field.kind === 'data'
      ? `${operator} needs a number or a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[.sss]Z)`
      : `${operator} needs a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS[.sss]Z)`;
  }
  if (field.kind === 'subscribed') return `${operator} on subscribed needs true or false`;
  if (field.kind === 'data' && (operator === 'equals' || operator === 'notEquals')) {
    return `${operator} needs a string, number or boolean`;
  }
  return `${operator} needs a non-empty string`;
}

// Numbers may arrive as numeric strings from form-built trees.
function toNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  return undefined;
}

const logicSchema = z.unknown().transform((raw, ctx): FilterTree['logic'] => {
  if (raw === undefined || raw === null) return 'AND';
  const logic = typeof raw === 'string' ? raw.toUpperCase() : '';
  if (logic === 'AND' || logic === 'OR') return logic;
  ctx.addIssue({
    code: z.ZodIssueCode.custom,
    message: 'logic must be AND or OR',
    params: { code: 'invalid_enum_value' },
  });
  return z.NEVER;
});

const treeSchema: z.ZodType<FilterTree, z.ZodTypeDef, unknown> = z.lazy(() =>
  z.object({ logic: logicSchema, groups: z.array(groupSchema) }),
);

const groupSchema: z.ZodType<FilterGroup, z.ZodTypeDef, unknown> = z
  .object({ filters: z.array(filterSchema), conditions: treeSchema.nullish() })
  .transform(({ filters, conditions }) => (conditions ? { filters, conditions } : { filters }));

/** Validates and normalises a filter tree; 422 with field paths under `fieldPrefix` otherwise. */
export function parseFilterTree(input: unknown, fieldPrefix = 'condition'): FilterTree {
  const at = (path: string) => [fieldPrefix, path].filter((p) => p !== '').join('.');
  const tooDeep = findTooDeep(input, 1, '');
  if (tooDeep !== null) {
    throw validationError([
      { field: at(tooDeep), message: `Filter trees nest at most ${MAX_DEPTH} levels`, code: 'too_big' },
    ]);
  }
  // Counted on the raw input too, so the schema never walks a tree of a million empty groups.
  const { groups, filters } = countNodes(input);
  if (filters > MAX_FILTERS || groups > MAX_GROUPS) {
    const limits = `at most ${MAX_FILTERS} filters and ${MAX_GROUPS} groups`;
    const message = `A filter tree holds ${limits} (got ${filters} and ${groups})`;
    throw validationError([{ field: at(''), message, code: 'too_big' }]);
  }
  const result = treeSchema.safeParse(input);
  if (!result.success) {
    throw validationError(fieldErrors(result.error).map((e) => ({ ...e, field: at(e.field) })));
  }
  return result.data;
}

// Checked on the raw input, before the recursive schema walks it.
function findTooDeep(node: unknown, depth: number, path: string): string | null {
  if (depth > MAX_DEPTH) return path;
  const groups = (node as { groups?: unknown } | null)?.groups;
  if (!Array.isArray(groups)) return null;
  for (const [i, group] of groups.entries()) {
    const conditions = (group as { conditions?: unknown } | null)?.conditions;
    if (conditions === undefined || conditions === null) continue;
    const found = findTooDeep(
      conditions,
      depth + 1,
      [path, 'groups', i, 'conditions'].filter((p) => p !== '').join('.'),
    );
    if (found !== null) return found;
  }
  return null;
}

// Runs after findTooDeep, so its recursion is at most MAX_DEPTH deep.
function countNodes(node: unknown): { groups: number; filters: number } {
  const total = { groups: 0, filters: 0 };
  const groups = (node as { groups?: unknown } | null)?.groups;
  if (!Array.isArray(groups)) return total;
  for (const group of groups) {
    total.groups += 1;
    const { filters, conditions } = (group ?? {}) as { filters?: unknown; conditions?: unknown };
    if (Array.isArray(filters)) total.filters += filters.length;
    const inner = countNodes(conditions);
    total.groups += inner.groups;
    total.filters += inner.filters;
  }
  return total;
}

/**
 * The meaning of a tree's structure, for every back end: inside a group the filters and the nested `conditions`
 * tree are ANDed; `logic` joins the groups. An empty tree or group matches everything. `backend` says what one
 * filter is and how parts join (SQL text, a boolean, ...).
 */
export function foldFilterTree<T, F = Filter>(
  tree: FilterTree<F>,
  backend: { filter: (filter: F) => T; all: (parts: T[]) => T; any: (parts: T[]) => T },
): T {
  const groups = tree.groups.map((group) => {
    const parts = group.filters.map((filter) => backend.filter(filter));
    if (group.conditions) parts.push(foldFilterTree(group.conditions, backend));
    return backend.all(parts);
  });
  return tree.logic === 'OR' && groups.length > 0 ? backend.any(groups) : backend.all(groups);
}

/** Every filter of a parsed tree, group by group, each group's nested `conditions` after its own filters. */
export function treeFilters<F>(tree: FilterTree<F>): F[] {
  return tree.groups.flatMap((group) => [...group.filters, ...(group.conditions ? treeFilters(group.conditions) : [])]);
}

/** The `field` of every filter of a tree, nested groups included; walks stored JSON too (any shape, no throw). */
export function filterTreeFields(tree: unknown, out: string[] = []): string[] {
  if (Array.isArray(tree)) for (const t of tree) filterTreeFields(t, out);
  else if (tree && typeof tree === 'object') {
    const o = tree as Record<string, unknown>;
    if (typeof o.field === 'string') out.push(o.field);
    for (const [k, v] of Object.entries(o)) if (k !== 'field' && v && typeof v === 'object') filterTreeFields(v, out);
  }
  return out;
}
