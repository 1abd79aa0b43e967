import { useEffect, useState } from 'preact/hooks';
import { get, post } from '../api';

export interface Filter {
  field: string;
  operator: string;
  value?: unknown;
  unit?: string;
}

export interface Group {
  filters: Filter[];
  conditions?: Tree;
}

export interface Tree {
  logic: 'AND' | 'OR';
  groups: Group[];
}

interface FieldDescriptor {
  field: string;
  type: string;
}

// Operators by field type (docs/segments.md "Filter tree").
const OPERATORS: Record<string, string[]> = {
  string: ['equals', 'notEquals', 'contains', 'notContains', 'exists', 'notExists'],
  number: ['equals', 'notEquals', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'exists'],
  boolean: ['equals', 'notEquals', 'exists', 'notExists'],
  date: ['greaterThan', 'lessThan', 'within', 'olderThan', 'exists', 'notExists'],
  event: ['triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin'],
  segment: ['memberOfSegment', 'notMemberOfSegment'],
};
const NO_VALUE = new Set(['exists', 'notExists', 'triggered', 'notTriggered', 'memberOfSegment', 'notMemberOfSegment']);
const TIMED = new Set(['within', 'olderThan', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin']);

export const emptyTree = (): Tree => ({ logic: 'AND', groups: [{ filters: [] }] });

/** Drops empty groups: what the API is sent. */
export function cleanTree(tree: Tree): Tree {
  return {
    logic: tree.logic,
    groups: tree.groups
      .map((g) => ({ ...g, conditions: g.conditions ? cleanTree(g.conditions) : undefined }))
      .filter((g) => g.filters.length > 0 || (g.conditions && g.conditions.groups.length > 0)),
  };
}

function typeOf(field: string, fields: FieldDescriptor[]): string {
  if (field.startsWith('event.') || field.startsWith('email.')) return 'event';
  if (field.startsWith('segment.')) return 'segment';
  return fields.find((f) => f.field === field)?.type ?? 'string';
}

/** Field choices: the project's fields, its event names and segments. */
function useChoices() {
  const [choices, setChoices] = useState<{ fields: FieldDescriptor[]; extra: [string, string][] }>({
    fields: [],
    extra: [],
  });
  useEffect(() => {
    Promise.all([
      get('/contacts/fields').catch(() => ({ fields: [] })),
      get('/events/names').catch(() => []),
      get('/segments').catch(() => []),
    ]).then(([f, names, segments]) => {
      const eventNames: string[] = Array.isArray(names) ? names : (names.names ?? names.data ?? []);
      setChoices({
        fields: f.fields,
        extra: [
          ...eventNames.map((n: any): [string, string] => [`event.${n.name ?? n}`, `event: ${n.name ?? n}`]),
          ...['sent', 'open', 'click', 'bounce'].map((a): [string, string] => [`email.${a}`, `email ${a}`]),
          ...segments.map((s: any): [string, string] => [`segment.${s.id}`, `segment: ${s.name}`]),
        ],
      });
    });
  }, []);
  return choices;
}

/** The filter-tree builder with a live count of matching contacts. */
export function FilterBuilder({ tree, onChange }: { tree: Tree; onChange: (t: Tree) => void }) {
  const choices = useChoices();
  const [count, setCount] = useState<number | null>(null);
  const [countError, setCountError] = useState<string | null>(null);
  useEffect(() => {
    const timer = setTimeout(async () => {
      try {
        const out = await post('/contacts/filter', { condition: cleanTree(tree), limit: 1 });
        setCount(out.total);
        setCountError(null);
      } catch (e) {
        setCountError((e as Error).message);
        setCount(null);
      }
    }, 300);
    return () => clearTimeout(timer);
  }, [JSON.stringify(tree)]);
  return (
    <div class="builder">
      <TreeEditor tree={tree} onChange={onChange} choices={choices} depth={0} />
      <p role="status" aria-live="polite">
        {countError ? (
          <span class="field-error">{countError}</span>
        ) : (
          <>
            Matching contacts: <strong data-testid="audience-count">{count ?? '...'}</strong>
          </>
        )}
      </p>
    </div>
  );
}

type Choices = ReturnType<typeof useChoices>;

function TreeEditor(props: { tree: Tree; onChange: (t: Tree) => void; choices: Choices; depth: number }) {
  const { tree, onChange, choices, depth } = props;
  const setGroup = (i: number, g: Group) => onChange({ ...tree, groups: tree.groups.map((x, j) => (j === i ? g : x)) });
  return (
    <fieldset class="tree">
      <legend>
        <label>
          Groups combined with{' '}
          <select
            aria-label="Logic"
            value={tree.logic}
            onChange={(e) => onChange({ ...tree, logic: e.currentTarget.value as 'AND' | 'OR' })}
          >
            <option value="AND">AND (all groups)</option>
            <option value="OR">OR (any group)</option>
          </select>
        </label>
      </legend>
      {tree.groups.map((g, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: groups have no identity; every input is controlled by the tree
        <div class="group" key={i}>
          {g.filters.map((f, k) => (
            <FilterRow
              // biome-ignore lint/suspicious/noArrayIndexKey: filters have no identity; every input is controlled
              key={k}
              filter={f}
              choices={choices}
              onChange={(nf) => setGroup(i, { ...g, filters: g.filters.map((x, j) => (j === k ? nf : x)) })}
              onRemove={() => setGroup(i, { ...g, filters: g.filters.filter((_, j) => j !== k) })}
            />
          ))}
          <button
            type="button"
            class="small"
            onClick={() =>
              setGroup(i, { ...g, filters: [...g.filters, { field: 'email', operator: 'contains', value: '' }] })
            }
          >
            Add filter
          </button>{' '}
          {depth < 3 && !g.conditions && (
            <button type="button" class="small" onClick={() => setGroup(i, { ...g, conditions: emptyTree() })}>
              Add nested group
            </button>
          )}{' '}
          <button
            type="button"
            class="small"
            onClick={() => onChange({ ...tree, groups: tree.groups.filter((_, j) => j !== i) })}
          >
            Remove group
          </button>
          {g.conditions && (
            <TreeEditor
              tree={g.conditions}
              choices={choices}
              depth={depth + 1}
              onChange={(c) => setGroup(i, { ...g, conditions: c })}
            />
          )}
        </div>
      ))}
      <button
        type="button"
        class="small"
        onClick={() => onChange({ ...tree, groups: [...tree.groups, { filters: [] }] })}
      >
        Add group
      </button>
    </fieldset>
  );
}

function FilterRow(props: { filter: Filter; choices: Choices; onChange: (f: Filter) => void; onRemove: () => void }) {
  const { filter: f, choices } = props;
  const type = typeOf(f.field, choices.fields);
  const operators = OPERATORS[type] ?? OPERATORS.string;
  const known = choices.fields.some((x) => x.field === f.field) || choices.extra.some(([v]) => v === f.field);
  const coerce = (raw: string): unknown => {
    if (type === 'number' || TIMED.has(f.operator)) return raw === '' ? '' : Number(raw);
    if (type === 'boolean') return raw === 'true';
    return raw;
  };
  return (
    <div class="filter">
      <select
        aria-label="Field"
        value={f.field}
        onChange={(e) => {
          const field = e.currentTarget.value;
          const ops = OPERATORS[typeOf(field, choices.fields)] ?? OPERATORS.string;
          props.onChange({ field, operator: ops[0], value: undefined });
        }}
      >
        {!known && <option value={f.field}>{f.field}</option>}
        {choices.fields.map((x) => (
          <option key={x.field} value={x.field}>
            {x.field}
          </option>
        ))}
        {choices.extra.map(([v, label]) => (
          <option key={v} value={v}>
            {label}
          </option>
        ))}
      </select>
      <select
        aria-label="Operator"
        value={f.operator}
        onChange={(e) => props.onChange({ ...f, operator: e.currentTarget.value })}
      >
        {operators.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
      {!NO_VALUE.has(f.operator) &&
        (type === 'boolean' && !TIMED.has(f.operator) ? (
          <select
            aria-label="Value"
            value={String(f.value ?? 'true')}
            onChange={(e) => props.onChange({ ...f, value: e.currentTarget.value === 'true' })}
          >
            <option value="true">true</option>
            <option value="false">false</option>
          </select>
        ) : (
          <input
            aria-label="Value"
            value={f.value === undefined ? '' : String(f.value)}
            onInput={(e) => props.onChange({ ...f, value: coerce(e.currentTarget.value) })}
          />
        ))}
      {TIMED.has(f.operator) && (
        <select
          aria-label="Unit"
          value={f.unit ?? 'days'}
          onChange={(e) => props.onChange({ ...f, unit: e.currentTarget.value })}
        >
          <option>minutes</option>
          <option>hours</option>
          <option>days</option>
        </select>
      )}
      <button type="button" class="small" aria-label="Remove filter" onClick={props.onRemove}>
        ✕
      </button>
    </div>
  );
}
