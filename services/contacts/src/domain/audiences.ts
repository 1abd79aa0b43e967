import type { ContactsStore } from '../store/contacts-store.js';
import { compileFilter, SqlParams } from './filter-sql.js';
import { parseFilterTree } from './filter-tree.js';
import type { SegmentConditions } from './segment-conditions.js';

/** Filter trees evaluated over a project's contacts: for segments, campaigns and previews. */
export class Audiences {
  constructor(
    private readonly store: ContactsStore,
    private readonly segments: SegmentConditions,
  ) {}

  private async compile(projectId: string, condition: unknown) {
    const tree = parseFilterTree(condition ?? { logic: 'AND', groups: [] }, 'condition');
    const params = new SqlParams([projectId], await this.segments.expand(projectId, tree));
    const sql = compileFilter(tree, params, 'c');
    return { sql, params: params.values };
  }

  async count(projectId: string, condition: unknown): Promise<number> {
    const { sql, params } = await this.compile(projectId, condition);
    return this.store.count(projectId, sql, params);
  }

  async page(projectId: string, condition: unknown, limit: number, offset: number) {
    const { sql, params } = await this.compile(projectId, condition);
    const [contacts, total] = await Promise.all([
      this.store.page(sql, params, limit, offset),
      this.store.count(projectId, sql, params),
    ]);
    return { contacts, total };
  }

  async *stream(projectId: string, condition: unknown, subscribedOnly: boolean) {
    const { sql, params } = await this.compile(projectId, condition);
    yield* this.store.idsMatching(sql, params, subscribedOnly);
  }
}
