import { AppError } from '@svc/lib/errors';
import type { SegmentsStore } from '../store/segments-store.js';
import { parseFilterTree } from '@svc/lib/filter-tree';
import { membershipTree, referencedSegments, SegmentConditions } from './segment-conditions.js';

const A = '0190a000-0000-7000-8000-00000000000a';
const B = '0190a000-0000-7000-8000-00000000000b';
const C = '0190a000-0000-7000-8000-00000000000c';
const uses = (id: string) => ({
  logic: 'AND',
  groups: [{ filters: [{ field: `segment.${id}`, operator: 'memberOfSegment' }] }],
});

/** Stored conditions by segment id (null: a static segment). */
const conditions = (stored: Record<string, unknown>) =>
  new SegmentConditions({
    conditionOf: async (_p: string, id: string) => stored[id] ?? null,
  } as unknown as SegmentsStore);

describe('segment references in filter trees', () => {
  test('referencedSegments finds segment.<id> fields in nested groups, once each', () => {
    const tree = parseFilterTree({
      logic: 'OR',
      groups: [
        { filters: [{ field: `segment.${A}`, operator: 'memberOfSegment' }], conditions: uses(B) },
        uses(A).groups[0],
      ],
    });
    expect(referencedSegments(tree).sort()).toEqual([A, B]);
  });

  test('expand loads dynamic segments transitively and leaves static ones to stored members', async () => {
    const expanded = await conditions({ [A]: uses(B), [B]: { logic: 'AND', groups: [] } }).expand(
      'p',
      membershipTree(A),
    );
    expect([...expanded.keys()].sort()).toEqual([A, B]);
    expect([...(await conditions({}).expand('p', membershipTree(C))).keys()]).toEqual([]);
  });

  test('a cycle, also through the condition being defined, is a 400', async () => {
    await expect(conditions({ [A]: uses(B), [B]: uses(A) }).expand('p', membershipTree(A))).rejects.toMatchObject({
      status: 400,
    });
    const defining = conditions({ [B]: uses(A) });
    const err = await defining
      .expand('p', parseFilterTree(uses(B)), { id: A, tree: parseFilterTree(uses(B)) })
      .catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.status).toBe(400);
  });
});
