import type { AudienceType, CampaignType } from '../store/campaign-row.js';

/** The filter tree of a segment's members (contacts evaluates it: live condition or stored members). */
export const membersOf = (segmentId: string) => ({
  logic: 'AND',
  groups: [{ filters: [{ field: `segment.${segmentId}`, operator: 'memberOfSegment' }] }],
});

/** What the contacts service streams for an audience: no tree (every contact), a segment's members, or the filter. */
export function audienceTree(a: {
  audience_type: AudienceType;
  segment_id: string | null;
  audience_condition: unknown | null;
}): unknown | undefined {
  if (a.audience_type === 'SEGMENT' && a.segment_id) return membersOf(a.segment_id);
  if (a.audience_type === 'FILTERED') return a.audience_condition ?? undefined;
  return undefined;
}

/** MARKETING and HEADLESS campaigns go to subscribed contacts only; TRANSACTIONAL ones to the whole audience. */
export const subscribedOnly = (type: CampaignType) => type !== 'TRANSACTIONAL';

export interface References {
  segments: Set<string>;
  /** Standard fields (`email`, `subscribed`, ...) and data fields as `data.<path>`. */
  fields: Set<string>;
  events: Set<string>;
}

const SEGMENT_OPERATORS = new Set(['memberofsegment', 'notmemberofsegment']);
const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** What a stored filter tree references (DESIGN.md field names); tolerant of shapes it does not know. */
export function references(tree: unknown): References {
  const out: References = { segments: new Set(), fields: new Set(), events: new Set() };
  const walk = (node: unknown, depth: number) => {
    const t = asRecord(node);
    if (!t || depth > 20 || !Array.isArray(t.groups)) return;
    for (const g of t.groups) {
      const group = asRecord(g);
      if (!group) continue;
      for (const f of Array.isArray(group.filters) ? group.filters : []) {
        const filter = asRecord(f);
        if (!filter || typeof filter.field !== 'string') continue;
        const field = filter.field;
        const operator = typeof filter.operator === 'string' ? filter.operator.toLowerCase() : '';
        if (field.startsWith('segment.')) out.segments.add(field.slice(8).toLowerCase());
        else if (SEGMENT_OPERATORS.has(operator) && typeof filter.value === 'string')
          out.segments.add(filter.value.toLowerCase());
        else if (field.startsWith('event.')) out.events.add(field.slice(6));
        else if (!field.startsWith('email.')) out.fields.add(field);
      }
      walk(group.conditions, depth + 1);
    }
  };
  walk(tree, 0);
  return out;
}

/** A field as GET /contacts/fields/{f}/usage names it: `data.plan`, `plan` (a data key) or a standard field. */
export function referencesField(refs: References, field: string): boolean {
  if (refs.fields.has(field)) return true;
  const dataPath = field.startsWith('data.') ? field : `data.${field}`;
  for (const f of refs.fields) if (f === dataPath || f.startsWith(`${dataPath}.`)) return true;
  return false;
}
