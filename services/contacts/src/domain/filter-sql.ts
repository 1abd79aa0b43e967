import {
  foldFilterTree,
  parseFilterField,
  treeFilters,
  UNIT_SECONDS,
  type Filter,
  type FilterTree,
} from '@svc/lib/filter-tree';
import { ISO_TIME } from '@svc/lib/calendar-date';

// The SQL back end of the filter tree (lib/src/filter-tree.ts): compiles a parsed tree into one parameterised
// PostgreSQL boolean expression over `contacts <alias>`. User input only ever reaches the SQL as $n parameters.
// (The JavaScript back end, lib/src/filter-eval.ts, evaluates the same trees in workflows' CONDITION steps.)

/** Which managed indexes (filter-indexes.ts) exist: a kind of expression over a data path. */
export type IndexedPaths = (kind: IndexKind, path: string[]) => boolean;

const NO_INDEXES: IndexedPaths = () => false;

/** Collects bind values; the values already bound (e.g. the project id as $1) keep their numbers. */
export class SqlParams {
  readonly values: unknown[];

  /**
   * `segments`: conditions of the DYNAMIC segments the tree references (segment-conditions.ts),
   * compiled inline; any other `segment.<id>` reads stored members. `indexed`: the managed indexes that exist; a
   * filter on an indexed path compiles to the index's expression (same matches, another form).
   */
  constructor(
    bound: readonly unknown[] = [],
    readonly segments: ReadonlyMap<string, FilterTree> = new Map(),
    readonly indexed: IndexedPaths = NO_INDEXES,
  ) {
    this.values = [...bound];
  }

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

// A real calendar date (leap years included, year 0000 excluded) so that a matching text never
// makes the ::timestamptz cast throw. JavaScript reads filter values with these patterns; SQL reads stored values
// with `isoDateSql`, the same rule in a form PostgreSQL evaluates faster.
const LEAP_YEAR = '(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';
const CALENDAR_DATE =
  '(?!0000)(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])' +
  '|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))' +
  `|${LEAP_YEAR}-02-29)`;
/** A bare date: comparisons read it as midnight UTC. */
const ISO_DATE_PATTERN = `^${CALENDAR_DATE}$`;

/** The WHERE condition for `tree`; an empty tree (or group) matches every contact. */
export function compileFilter(tree: FilterTree, params: SqlParams, alias = 'c'): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(alias)) throw new Error(`Unsafe SQL alias "${alias}"`);
  return compileTree(tree, params, alias);
}

function compileTree(tree: FilterTree, params: SqlParams, c: string): string {
  return foldFilterTree(tree, {
    filter: (filter) => compileOne(filter, params, c),
    all: (parts) => combine(parts, 'AND'),
    any: (parts) => combine(parts, 'OR'),
  });
}

function combine(parts: string[], logic: 'AND' | 'OR'): string {
  if (parts.length === 0) return 'TRUE';
  return parts.length === 1 ? parts[0] : `(${parts.join(` ${logic} `)})`;
}

function compileOne(filter: Filter, params: SqlParams, c: string): string {
  const field = parseFilterField(filter.field);
  if (!field) throw new Error(`Filter field "${filter.field}" was not validated by parseFilterTree`);
  switch (field.kind) {
    case 'email':
      return emailSql(filter, params, c);
    case 'subscribed':
      return `(${c}.subscribed ${filter.operator === 'notEquals' ? '<>' : '='} ${params.add(filter.value)}::boolean)`;
    case 'timestamp':
      return timestampSql(filter, field.name === 'createdAt' ? `${c}.created_at` : `${c}.updated_at`, params);
    case 'data':
      return dataSql(filter, field.path, params, c);
    case 'event':
      return activitySql(filter, 'events', 'name', field.name, params, c);
    case 'emailActivity':
      return activitySql(filter, 'email_activity', 'type', field.activity, params, c);
    case 'segment': {
      const dynamic = params.segments.get(field.segmentId);
      if (dynamic) {
        const match = compileTree(dynamic, params, c);
        return filter.operator === 'notMemberOfSegment' ? negate(match) : match;
      }
      const segment = params.add(field.segmentId);
      const member =
        `EXISTS (SELECT 1 FROM segment_members f_sm WHERE f_sm.segment_id = ${segment}::uuid ` +
        `AND f_sm.contact_id = ${c}.id AND f_sm.project_id = ${c}.project_id)`;
      return filter.operator === 'notMemberOfSegment' ? `(NOT ${member})` : `(${member})`;
    }
  }
}

// SPEC.md: email matches case-insensitively.
function emailSql(filter: Filter, params: SqlParams, c: string): string {
  switch (filter.operator) {
    case 'equals':
      return `(lower(${c}.email) = lower(${params.add(filter.value)}))`;
    case 'notEquals':
      return `(lower(${c}.email) <> lower(${params.add(filter.value)}))`;
    case 'contains':
      return `(${c}.email ILIKE ${params.add(likePattern(filter.value))})`;
    case 'notContains':
      return `(${c}.email NOT ILIKE ${params.add(likePattern(filter.value))})`;
    case 'exists':
      return `(${c}.email IS NOT NULL)`;
    case 'notExists':
      return `(${c}.email IS NULL)`;
    default:
      throw unsupported(filter);
  }
}

function timestampSql(filter: Filter, column: string, params: SqlParams): string {
  const comparison = comparisonOperator(filter);
  if (comparison) return `(${column} ${comparison} ${params.add(dateValue(filter.value))}::timestamptz)`;
  if (filter.operator === 'within') return `(${column} >= ${cutoff(filter, params)})`;
  if (filter.operator === 'olderThan') return `(${column} < ${cutoff(filter, params)})`;
  throw unsupported(filter);
}

/**
 * What a managed index (filter-indexes.ts) holds for a data path: a number for range comparisons, the instant of an
 * ISO date-time for `within`/`olderThan`, a string's text for `equals`.
 */
export type IndexKind = 'number' | 'instant' | 'text';

/** SQL of a constant: a $n parameter when compiling, a literal in index DDL. */
export type Bind = (value: string | string[]) => string;

/** Characters of a string the `text` index keeps: any key fits a btree entry (at most 2,704 bytes). */
export const TEXT_KEY_CHARS = 200;

/**
 * The expressions of the managed indexes, over `data` (SQL of the jsonb column) and a path whose constants `bind`
 * gives. The index DDL uses the same functions, so an index expression is the compiled one; node-postgres sends
 * unnamed statements, which PostgreSQL plans with the bound path as a constant that matches it. Each never throws
 * (a write would fail) and is NULL where the filter cannot match.
 * - number: CASE, not AND: PostgreSQL may evaluate AND operands in any order and the cast would throw.
 * - instant: isoInstantSql, immutable (the ::timestamptz cast is not).
 * - text: `->` per key, as containment (`@>`) reads a path: never into an array. Cut to TEXT_KEY_CHARS.
 */
export const INDEX_EXPRESSIONS: Record<IndexKind, (data: string, path: string[], bind: Bind) => string> = {
  number: (data, path, bind) => {
    const p = bind(path);
    return `CASE WHEN jsonb_typeof((${data} #> ${p}::text[])) = 'number' THEN (${data} #> ${p}::text[])::numeric END`;
  },
  instant: (data, path, bind) => isoInstantSql(`(${data} #>> ${bind(path)}::text[])`),
  text: (data, path, bind) => {
    const value = `(${data}${path.map((key) => ` -> ${bind(key)}::text`).join('')})`;
    return `CASE WHEN jsonb_typeof(${value}) = 'string' THEN left(${value} #>> '{}', ${TEXT_KEY_CHARS}) END`;
  },
};

/** The data paths a tree compares, each with the kind of index that would serve it (INDEX_EXPRESSIONS). */
export function indexUses(tree: FilterTree): Array<{ path: string[]; kind: IndexKind }> {
  return treeFilters(tree).flatMap((filter) => {
    const field = parseFilterField(filter.field);
    if (field?.kind !== 'data') return [];
    const uses: Array<{ path: string[]; kind: IndexKind }> = [];
    if (comparisonOperator(filter) && typeof filter.value === 'number') uses.push({ path: field.path, kind: 'number' });
    if (filter.operator === 'within' || filter.operator === 'olderThan')
      uses.push({ path: field.path, kind: 'instant' });
    if (filter.operator === 'equals' && typeof filter.value === 'string') uses.push({ path: field.path, kind: 'text' });
    return uses;
  });
}

/**
 * SQL: the instant of `text` when it is an ISO date-time (ISO_TIME) on a real calendar date, else NULL; equal to
 * `text::timestamptz` there. Immutable, so an index can hold it: integer fields into make_timestamp, the offset
 * subtracted before reading the result as UTC, and the fraction rounded to microseconds as timestamptz input rounds
 * it (rint of strtod's value). About 4 us a row: compiled only where its index serves (dateWindowSql otherwise).
 */
function isoInstantSql(text: string): string {
  const t = text;
  const zone = `CASE WHEN right(${t}, 1) = 'Z' THEN 1 ELSE 6 END`;
  const fraction =
    `CASE WHEN substr(${t}, 20, 1) = '.' THEN round(('0' || substr(${t}, 20, length(${t}) - 19 - ${zone}))` +
    `::double precision * 1000000) * interval '1 microsecond' ELSE interval '0' END`;
  const offset =
    `CASE WHEN right(${t}, 1) = 'Z' THEN interval '0' ELSE make_interval(mins => ` +
    `(CASE WHEN substr(right(${t}, 6), 1, 1) = '-' THEN -1 ELSE 1 END) * ` +
    `(substr(right(${t}, 6), 2, 2)::int * 60 + substr(right(${t}, 6), 5, 2)::int)) END`;
  const local =
    `make_timestamp(substr(${t}, 1, 4)::int, substr(${t}, 6, 2)::int, substr(${t}, 9, 2)::int, ` +
    `substr(${t}, 12, 2)::int, substr(${t}, 15, 2)::int, substr(${t}, 18, 2)::int)`;
  return `(CASE WHEN ${isoDateSql(t, ISO_TIME)} THEN (${local} + ${fraction} - ${offset}) AT TIME ZONE 'UTC' END)`;
}

function dataSql(filter: Filter, path: string[], params: SqlParams, c: string): string {
  const { operator, value } = filter;
  const bind: Bind = (v) => params.add(v);
  if (
    (operator === 'equals' || operator === 'notEquals') &&
    typeof value === 'string' &&
    params.indexed('text', path)
  ) {
    const match = textEqualsSql(INDEX_EXPRESSIONS.text(`${c}.data`, path, bind), value, path, params, c);
    return operator === 'equals' ? match : negate(match);
  }
  // Equality by containment so the jsonb_path_ops GIN index (contacts_data_gin) serves it.
  if (operator === 'equals' || operator === 'notEquals') {
    const contains = `${c}.data @> ${params.add(JSON.stringify(nestValue(path, value)))}::jsonb`;
    return operator === 'equals' ? `(${contains})` : `(NOT ${contains})`;
  }
  const comparison = comparisonOperator(filter);
  if (comparison && typeof value === 'number') {
    return `(${INDEX_EXPRESSIONS.number(`${c}.data`, path, bind)} ${comparison} ${params.add(value)}::numeric)`;
  }
  if ((operator === 'within' || operator === 'olderThan') && params.indexed('instant', path)) {
    // The cutoff inline, not as a subquery: an index condition computes it once, and the planner estimates the
    // window from the index's statistics (it cannot see into a subquery's value).
    const instant = INDEX_EXPRESSIONS.instant(`${c}.data`, path, bind);
    return `(${instant} ${operator === 'within' ? '>=' : '<'} ${cutoffValue(filter, params)})`;
  }
  const p = params.add(path);
  const json = `(${c}.data #> ${p}::text[])`;
  const text = `(${c}.data #>> ${p}::text[])`;
  if (comparison) return `(${storedDate(text)} ${comparison} ${params.add(dateValue(value))}::timestamptz)`;
  switch (operator) {
    case 'contains':
    case 'notContains': {
      // Strings match by substring (case-insensitive); arrays match when they hold the value.
      const like = params.add(likePattern(value));
      const element = params.add(JSON.stringify([value]));
      const match =
        `((jsonb_typeof(${json}) = 'string' AND ${text} ILIKE ${like}) OR ` +
        `(jsonb_typeof(${json}) = 'array' AND ${json} @> ${element}::jsonb))`;
      return operator === 'contains' ? match : negate(match);
    }
    case 'exists':
      return `(jsonb_typeof(${json}) <> 'null')`;
    case 'notExists':
      return negate(`(jsonb_typeof(${json}) <> 'null')`);
    case 'within': {
      // A constant bound lets the planner estimate the window and use a managed index on the path (the cutoff is a
      // subquery it cannot see into). Computed now, it stays a necessary condition for later runs of this SQL (time
      // only moves the cutoff forward). Never for olderThan, whose set grows with time. It is as tight as is safe:
      // an overestimated window made the planner AND the GIN's whole `equals` match into a selective plan.
      const bound = params.add(withinBound(Date.now() - withinSeconds(filter) * 1000));
      const window = dateWindowSql(text, operator, cutoffValue(filter, params));
      return `(${text} COLLATE "C" >= ${bound}::text AND ${window})`;
    }
    case 'olderThan':
      return dateWindowSql(text, operator, cutoffValue(filter, params));
    default:
      throw unsupported(filter);
  }
}

/**
 * A string `equals` over the `text` index's expression. A value shorter than the index's cut equals the cut text
 * only when it equals the whole string; a longer one also compares the whole value (`->` as the index reads it).
 */
function textEqualsSql(indexed: string, value: string, path: string[], params: SqlParams, c: string): string {
  const chars = [...value]; // code points, as PostgreSQL's left() counts characters
  if (chars.length < TEXT_KEY_CHARS) return `(${indexed} = ${params.add(value)}::text)`;
  const whole = `(${c}.data${path.map((key) => ` -> ${params.add(key)}::text`).join('')})`;
  const cut = params.add(chars.slice(0, TEXT_KEY_CHARS).join(''));
  return `(${indexed} = ${cut}::text AND ${whole} = ${params.add(JSON.stringify(value))}::jsonb)`;
}

/**
 * `within`/`olderThan` on a stored text, cheapest test first. The date part of a valid ISO value is within one day
 * of its UTC date whatever its offset (always under 24 hours), so a plain text comparison with the cutoff's UTC
 * date rules out most rows, and another one settles rows more than a day on the matching side: only values near the
 * cutoff are cast. In byte order a text compares with a 10-character day `D` as its first 10 characters do, so the
 * whole text is compared (no `left()` per row); "date part after `D`" is "text >= the day after `D`" for valid
 * values. The days are computed in UTC (a day added in a session zone with DST can be 23 hours) and, like the cutoff,
 * as scalar subqueries: once per query.
 */
function dateWindowSql(text: string, operator: 'within' | 'olderThan', cut: string): string {
  const day = (days: number) => `(SELECT to_char((${cut}) AT TIME ZONE 'UTC' + interval '${days} days', 'YYYY-MM-DD'))`;
  const t = `${text} COLLATE "C"`;
  const within = operator === 'within';
  // within: date part >= cutoff day - 1 (near), > cutoff day + 1 (far); olderThan: <= cutoff day + 1, < - 1.
  const near = within ? `${t} >= ${day(-1)}` : `${t} < ${day(2)}`;
  const far = within ? `${t} >= ${day(2)}` : `${t} < ${day(-1)}`;
  const exact = `${text}::timestamptz ${within ? '>=' : '<'} (SELECT ${cut})`;
  return `(${near} AND (CASE WHEN ${isoDateSql(text, ISO_TIME)} THEN ${far} OR ${exact} END))`;
}

// Only texts proven castable are cast; anything else yields NULL and matches nothing.
function storedDate(text: string): string {
  const dateTime = `WHEN ${isoDateSql(text, ISO_TIME)} THEN ${text}::timestamptz`;
  const bareDate = `WHEN ${isoDateSql(text, '')} THEN (${text} || 'T00:00:00Z')::timestamptz`;
  return `(CASE ${dateTime} ${bareDate} END)`;
}

/**
 * SQL: `text` is an ISO 8601 date followed by `time` (a pattern), on a real calendar date. The regex checks the
 * shape and each field's range; the calendar (30-day months, February, leap years, no year 0000) is text
 * comparisons. PostgreSQL builds a regex's automaton anew on every call, so the small regex and the comparisons
 * cost less than half of CALENDAR_DATE's (the `(?!0000)` lookahead alone was a third).
 */
function isoDateSql(text: string, time: string): string {
  return (
    `(${text} ~ '^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])${time}$' AND left(${text}, 4) <> '0000' ` +
    `AND (substr(${text}, 6, 5) NOT IN ('02-29', '02-30', '02-31', '04-31', '06-31', '09-31', '11-31') ` +
    `OR ${text} ~ '^${LEAP_YEAR}-02-29'))`
  );
}

function activitySql(
  filter: Filter,
  table: 'events' | 'email_activity',
  column: string,
  name: string,
  params: SqlParams,
  c: string,
): string {
  const conditions = [
    `f_act.project_id = ${c}.project_id`,
    `f_act.contact_id = ${c}.id`,
    `f_act.${column} = ${params.add(name)}`,
  ];
  if (filter.operator === 'triggeredWithin' || filter.operator === 'notTriggeredWithin') {
    conditions.push(`f_act.created_at >= ${cutoff(filter, params)}`);
  } else if (filter.operator === 'triggeredOlderThan') {
    conditions.push(`f_act.created_at < ${cutoff(filter, params)}`);
  }
  const exists = `EXISTS (SELECT 1 FROM ${table} f_act WHERE ${conditions.join(' AND ')})`;
  const negated = filter.operator === 'notTriggered' || filter.operator === 'notTriggeredWithin';
  return negated ? `(NOT ${exists})` : `(${exists})`;
}

function comparisonOperator(filter: Filter): string | undefined {
  const sql: Partial<Record<Filter['operator'], string>> = {
    greaterThan: '>',
    lessThan: '<',
    greaterThanOrEqual: '>=',
    lessThanOrEqual: '<=',
  };
  return sql[filter.operator];
}

/** now() minus the filter's amount of units, computed once per query (a scalar subquery is an InitPlan). */
function cutoff(filter: Filter, params: SqlParams): string {
  return `(SELECT ${cutoffValue(filter, params)})`;
}

/** The expression of the cutoff, the amount bound as seconds: stable, so PostgreSQL would run it on every row. */
function cutoffValue(filter: Filter, params: SqlParams): string {
  return `now() - make_interval(secs => ${params.add(withinSeconds(filter))}::double precision)`;
}

const withinSeconds = (filter: Filter) => Number(filter.value) * UNIT_SECONDS[filter.unit ?? 'days'];

/** Offsets ISO_TIME allows go up to 14:59 either way. */
const MAX_OFFSET_MS = 15 * 3600_000;
/** How far PostgreSQL's clock may be behind Node's without `within` missing a match. */
const CLOCK_SKEW_MS = 3600_000;

/**
 * A text every value `within` matches compares >= in byte order, for a cutoff of `cutoffMs` by Node's clock: the
 * local date-time (`YYYY-MM-DDTHH:MM`, cut to the minute) of the earliest matching moment at the lowest offset. A
 * valid value starts with its local date-time in that fixed-width form (amounts are at most 100 years: always a
 * 4-digit year), so byte order is time order there.
 */
const withinBound = (cutoffMs: number) => new Date(cutoffMs - MAX_OFFSET_MS - CLOCK_SKEW_MS).toISOString().slice(0, 16);

// Bare dates compare as midnight UTC so the session time zone never changes a result.
function dateValue(value: Filter['value']): string {
  const text = String(value);
  return new RegExp(ISO_DATE_PATTERN).test(text) ? `${text}T00:00:00Z` : text;
}

function likePattern(value: Filter['value']): string {
  return `%${String(value).replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

function nestValue(path: string[], value: unknown): unknown {
  return path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);
}

// The negation also matches contacts where the positive test is NULL (the key is absent).
function negate(condition: string): string {
  return `(NOT COALESCE(${condition}, FALSE))`;
}

function unsupported(filter: Filter): Error {
  return new Error(`Operator ${filter.operator} on ${filter.field} was not validated by parseFilterTree`);
}
