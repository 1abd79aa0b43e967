import { badRequest } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';

/** As the filter tree allows (lib/src/filter-tree.ts): a field string up to 1,000 characters. */
const MAX_REFERENCE_LENGTH = 1000;

/** What a filter's `field` must be to reference a contact field or an event (FindSegmentsUsing). */
export interface FilterReference {
  exact: string[];
  /** Fields below it also reference it (data.profile -> data.profile.tier); null: none. */
  prefix: string | null;
}

/**
 * A contact field (`email`, ..., `data.<path>`) is referenced by filters on it, a data path also by filters on paths
 * below it; an event name by `event.<name>` filters, and an `email.<activity>` name also by the `email.<activity>`
 * filters that read the same lifecycle. Exactly one of the two must be given (400 otherwise).
 */
export function filterReference(ref: { field?: string; eventName?: string }): FilterReference {
  const given = [ref.field, ref.eventName].filter((v) => v !== undefined);
  if (given.length !== 1) throw badRequest('Give exactly one of field and event_name');
  const value = given[0] as string;
  if (value.trim() === '' || value.length > MAX_REFERENCE_LENGTH)
    throw badRequest(`A field or event name is 1 to ${MAX_REFERENCE_LENGTH} characters`);
  // Only custom data nests: `email.open` is an email activity, not a path below the standard field `email`.
  if (ref.field !== undefined) return { exact: [value], prefix: value.startsWith('data.') ? `${value}.` : null };
  return { exact: value.startsWith('email.') ? [`event.${value}`, value] : [`event.${value}`], prefix: null };
}

const MEMBERSHIP_OPERATORS = new Set(['memberofsegment', 'notmemberofsegment']);
const SEGMENT_FIELD = /^segment\.(.+)$/;
const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** A segment a filter tree names, and where (`condition.groups.0.filters.1.field`). */
export interface SegmentReference {
  id: string;
  field: string;
}

/**
 * The segments a filter tree (as sent or stored) references: a `segment.<id>` field, or a segment id as the value of a
 * membership filter (lib/src/filter-tree.ts). Tolerant of shapes the contacts service refuses; ids lower-cased, and
 * only those that are uuids (anything else is the contacts service's 422).
 */
export function segmentReferences(tree: unknown, at = 'condition'): SegmentReference[] {
  const out: SegmentReference[] = [];
  const walk = (node: unknown, path: string, depth: number) => {
    const t = asRecord(node);
    if (!t || depth > 20 || !Array.isArray(t.groups)) return;
    t.groups.forEach((g, gi) => {
      const group = asRecord(g);
      if (!group) return;
      const filters = Array.isArray(group.filters) ? group.filters : [];
      filters.forEach((f, fi) => {
        const filter = asRecord(f);
        const here = `${path}.groups.${gi}.filters.${fi}`;
        const named = typeof filter?.field === 'string' ? SEGMENT_FIELD.exec(filter.field)?.[1] : undefined;
        const operator = typeof filter?.operator === 'string' ? filter.operator.toLowerCase() : '';
        if (named !== undefined) {
          if (isUuid(named)) out.push({ id: named.toLowerCase(), field: `${here}.field` });
        } else if (MEMBERSHIP_OPERATORS.has(operator) && typeof filter?.value === 'string' && isUuid(filter.value)) {
          out.push({ id: filter.value.toLowerCase(), field: `${here}.value` });
        }
      });
      walk(group.conditions, `${path}.groups.${gi}.conditions`, depth + 1);
    });
  };
  walk(tree, at, 0);
  return out;
}
