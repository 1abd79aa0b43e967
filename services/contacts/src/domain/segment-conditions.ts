import { badRequest, validationError } from '@svc/lib/errors';
import { segmentReferences } from '@svc/lib/segment-references';
import type { SegmentsStore } from '../store/segments-store.js';
import { parseFilterField, parseFilterTree, type FilterTree } from '@svc/lib/filter-tree';

/** How deep `segment.<id>` references may chain (A uses B uses C ...) before expansion refuses. */
const MAX_SEGMENT_NESTING = 5;
/** Distinct dynamic segments one evaluation may expand: bounds the compiled SQL. */
const MAX_EXPANDED_SEGMENTS = 20;

/** The segment ids a tree references through `segment.<id>` filters. */
export function referencedSegments(tree: FilterTree): string[] {
  const ids = new Set<string>();
  const walk = (t: FilterTree) => {
    for (const g of t.groups) {
      for (const f of g.filters) {
        const field = parseFilterField(f.field);
        if (field?.kind === 'segment') ids.add(field.segmentId);
      }
      if (g.conditions) walk(g.conditions);
    }
  };
  walk(tree);
  return [...ids];
}

/** The filter tree matching the members of one segment (live condition or stored members). */
export const membershipTree = (segmentId: string): FilterTree => ({
  logic: 'AND',
  groups: [{ filters: [{ field: `segment.${segmentId}`, operator: 'memberOfSegment' }] }],
});

/**
 * Resolves the DYNAMIC segments a tree references, transitively, so filter-sql.ts can inline
 * their conditions: a dynamic segment is always evaluated live, never from a stale copy.
 * A cycle (A uses B uses A) or a chain deeper than 5 is a 400.
 */
export class SegmentConditions {
  constructor(private readonly store: SegmentsStore) {}

  /** `self`: a segment being defined, checked with its new condition in place. */
  async expand(
    projectId: string,
    tree: FilterTree,
    self?: { id: string; tree: FilterTree },
  ): Promise<Map<string, FilterTree>> {
    const loaded = new Map<string, FilterTree | null>();
    if (self) loaded.set(self.id, self.tree);
    const visit = async (t: FilterTree, path: string[]): Promise<void> => {
      for (const id of referencedSegments(t)) {
        if (path.includes(id))
          throw badRequest('Segment conditions reference each other in a cycle', { segments: [...path, id] });
        if (path.length >= MAX_SEGMENT_NESTING) {
          throw badRequest(`Segment references nest deeper than ${MAX_SEGMENT_NESTING} levels`, {
            segments: [...path, id],
          });
        }
        if (!loaded.has(id)) loaded.set(id, await this.load(projectId, id));
        if ([...loaded.values()].filter(Boolean).length > MAX_EXPANDED_SEGMENTS) {
          throw badRequest(`A condition may reference at most ${MAX_EXPANDED_SEGMENTS} dynamic segments`);
        }
        const child = loaded.get(id);
        if (child) await visit(child, [...path, id]);
      }
    };
    await visit(tree, self ? [self.id] : []);
    const dynamic = new Map<string, FilterTree>();
    for (const [id, t] of loaded) if (t) dynamic.set(id, t);
    return dynamic;
  }

  /**
   * A 422 naming each place the tree (as sent) names a segment the project lacks (another project's, deleted or never
   * created), as POST /segments and campaigns answer: read as "no members", it would preview a wrong audience.
   */
  async requireKnown(projectId: string, condition: unknown): Promise<void> {
    const refs = segmentReferences(condition);
    if (!refs.length) return;
    const known = await this.store.existing(projectId, [...new Set(refs.map((r) => r.id))]);
    const message = 'Segment not found in this project';
    const errors = refs
      .filter((r) => !known.has(r.id))
      .map((r) => ({ field: r.field, message, code: 'not_found', received: r.id }));
    if (errors.length) throw validationError(errors);
  }

  private async load(projectId: string, segmentId: string): Promise<FilterTree | null> {
    const condition = await this.store.conditionOf(projectId, segmentId);
    return condition === null ? null : parseFilterTree(condition, 'condition');
  }
}
