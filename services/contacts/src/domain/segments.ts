import { isUuid } from '@svc/lib/ids';
import { validationError } from '@svc/lib/errors';
import type { SegmentsStore } from '../store/segments-store.js';
import { compileFilter, SqlParams } from './filter-sql.js';
import { parseFilterTree, type FilterTree } from '@svc/lib/filter-tree';
import { membershipTree, type SegmentConditions } from './segment-conditions.js';

const requireUuid = (field: string, v: string) => {
  if (!isUuid(v))
    throw validationError([{ field, message: `${field} must be a UUID`, code: 'invalid_string', received: v }]);
};

/** What the segments service keeps here so filters can read segments (its read model). */
export class Segments {
  constructor(
    private readonly store: SegmentsStore,
    private readonly conditions: SegmentConditions,
    /** A saved condition changed: the managed filter indexes follow in the background (filter-indexes.ts). */
    private readonly definitionsChanged: () => void = () => undefined,
  ) {}

  /** Validates a DYNAMIC condition (422 field errors, 400 for a cycle) before storing it. */
  async define(projectId: string, segmentId: string, condition: unknown | undefined, isStatic: boolean): Promise<void> {
    requireUuid('segmentId', segmentId);
    if (isStatic) {
      await this.store.define(projectId, segmentId, null);
    } else {
      const tree = parseFilterTree(condition, 'condition');
      await this.conditions.expand(projectId, tree, { id: segmentId.toLowerCase(), tree });
      await this.store.define(projectId, segmentId, condition);
    }
    this.definitionsChanged();
  }

  async forget(projectId: string, segmentId: string): Promise<void> {
    requireUuid('segmentId', segmentId);
    await this.store.forget(projectId, segmentId);
    this.definitionsChanged();
  }

  async setMembers(projectId: string, segmentId: string, add: string[], remove: string[]) {
    requireUuid('segmentId', segmentId);
    const ids = (list: string[]) => list.filter(isUuid);
    const added = await this.store.addMembers(projectId, segmentId, ids(add));
    const removed = await this.store.removeMembers(projectId, segmentId, ids(remove));
    return { added, removed };
  }

  /** The segments (of `segmentIds`) whose membership includes the contact now: one query. */
  async match(projectId: string, contactId: string, segmentIds: string[]): Promise<string[]> {
    const ids = segmentIds.filter(isUuid).map((id) => id.toLowerCase());
    if (!ids.length || !isUuid(contactId)) return [];
    const trees = ids.map(membershipTree);
    const dynamic = new Map<string, FilterTree>();
    for (const t of trees) for (const [id, d] of await this.conditions.expand(projectId, t)) dynamic.set(id, d);
    const params = new SqlParams([projectId, contactId], dynamic);
    const matched = await this.store.matchOne(
      trees.map((t) => compileFilter(t, params, 'c')),
      params.values,
    );
    return ids.filter((_, i) => matched[i]);
  }
}
