/** A contact as a segment's member list shows it. */
export interface MemberView {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAt?: Date;
  updatedAt?: Date;
}

/**
 * What segments needs of the contacts service, which owns contacts and evaluates filter trees
 * (and keeps segment definitions and static members as its read model).
 */
export interface ContactsPort {
  /** 422 for a bad tree, 400 for a cycle of segment references. */
  define(projectId: string, segmentId: string, condition: unknown | null): Promise<void>;
  forget(projectId: string, segmentId: string): Promise<void>;
  count(projectId: string, condition: unknown): Promise<number>;
  page(
    projectId: string,
    condition: unknown,
    limit: number,
    offset: number,
  ): Promise<{ members: MemberView[]; total: number }>;
  streamIds(projectId: string, condition: unknown): AsyncIterable<string[]>;
  lookup(
    projectId: string,
    emails: string[],
  ): Promise<{ found: Array<{ id: string; email: string }>; missing: string[] }>;
  create(projectId: string, emails: string[], subscribed: boolean | undefined): Promise<string[]>;
  setMembers(
    projectId: string,
    segmentId: string,
    add: string[],
    remove: string[],
  ): Promise<{ added: number; removed: number }>;
  match(projectId: string, contactId: string, segmentIds: string[]): Promise<string[]>;
}

/** The filter tree of a segment's members, evaluated by contacts (live condition or stored members). */
export const membersOf = (segmentId: string) => ({
  logic: 'AND',
  groups: [{ filters: [{ field: `segment.${segmentId}`, operator: 'memberOfSegment' }] }],
});
