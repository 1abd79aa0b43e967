import { isUuid } from './ids.js';

// Which segments a filter tree names (lib/src/filter-tree.ts: a `segment.<id>` field, or a segment id as a
// membership filter's value), and where: the segments service refuses a condition naming a segment the project
// lacks, and so does the contacts service's preview of a tree, each with a 422 naming the field.

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
