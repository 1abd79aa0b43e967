import { validationError } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { ContactsStore } from '../store/contacts-store.js';
import { compileFilter, SqlParams, type IndexedPaths } from './filter-sql.js';
import { parseFilterTree } from '@svc/lib/filter-tree';
import type { SegmentConditions } from './segment-conditions.js';

/** Filter trees evaluated over a project's contacts: for segments, campaigns and previews. */
export class Audiences {
  constructor(
    private readonly store: ContactsStore,
    private readonly segments: SegmentConditions,
    /** The managed filter indexes (filter-indexes.ts FilterIndexCatalog): indexed paths compile to their forms. */
    private readonly indexes: { indexed(): Promise<IndexedPaths> } = { indexed: async () => () => false },
  ) {}

  private async compile(projectId: string, condition: unknown) {
    const tree = parseFilterTree(condition ?? { logic: 'AND', groups: [] }, 'condition');
    const [segments, indexed] = await Promise.all([this.segments.expand(projectId, tree), this.indexes.indexed()]);
    const params = new SqlParams([projectId], segments, indexed);
    const sql = compileFilter(tree, params, 'c');
    return { sql, params: params.values };
  }

  async count(projectId: string, condition: unknown): Promise<number> {
    const { sql, params } = await this.compile(projectId, condition);
    return this.store.count(projectId, sql, params);
  }

  /** POST /contacts/filter and segment member lists: a segment the tree names must be the project's (422). */
  async page(projectId: string, condition: unknown, limit: number, offset: number) {
    const { sql, params } = await this.compile(projectId, condition);
    await this.segments.requireKnown(projectId, condition);
    const [contacts, total] = await Promise.all([
      this.store.page(sql, params, limit, offset),
      this.store.count(projectId, sql, params),
    ]);
    return { contacts, total };
  }

  /** Ids and emails of the matching contacts in id order, after `afterId` (exclusive) when given. */
  async *stream(projectId: string, condition: unknown, subscribedOnly: boolean, afterId?: string) {
    const { sql, params } = await this.compile(projectId, condition);
    yield* this.store.idsMatching(sql, params, subscribedOnly, 1000, checkAfterId(afterId));
  }

  /** As stream, with the full contacts. */
  async *streamContacts(projectId: string, condition: unknown, subscribedOnly: boolean, afterId?: string) {
    const { sql, params } = await this.compile(projectId, condition);
    yield* this.store.rowsMatching(sql, params, subscribedOnly, 1000, checkAfterId(afterId));
  }
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

function checkAfterId(afterId: string | undefined): string {
  if (!afterId) return NIL_UUID;
  if (!isUuid(afterId))
    throw validationError([
      { field: 'afterId', message: 'afterId must be a contact id', code: 'invalid_string', received: afterId },
    ]);
  return afterId;
}
