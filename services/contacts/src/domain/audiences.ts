import type { ContactsStore } from '../store/contacts-store.js';
import { compileFilter, SqlParams } from './filter-sql.js';
import { parseFilterTree } from './filter-tree.js';

/** Filter trees evaluated over a project's contacts: for segments, campaigns and previews. */
export class Audiences {
  constructor(private readonly store: ContactsStore) {}

  private compile(projectId: string, condition: unknown) {
    const tree = parseFilterTree(condition ?? { logic: 'AND', groups: [] }, 'condition');
    const params = new SqlParams([projectId]);
    const sql = compileFilter(tree, params, 'c');
    return { sql, params: params.values };
  }

  count(projectId: string, condition: unknown): Promise<number> {
    const { sql, params } = this.compile(projectId, condition);
    return this.store.count(projectId, sql, params);
  }

  async page(projectId: string, condition: unknown, limit: number, offset: number) {
    const { sql, params } = this.compile(projectId, condition);
    const [contacts, total] = await Promise.all([this.store.page(sql, params, limit, offset), this.store.count(projectId, sql, params)]);
    return { contacts, total };
  }

  stream(projectId: string, condition: unknown, subscribedOnly: boolean) {
    const { sql, params } = this.compile(projectId, condition);
    return this.store.idsMatching(sql, params, subscribedOnly);
  }
}
