import { segmentReferences } from './segment-references.js';

test('segment references: segment.<id> fields and membership values, nested, with where each is named', () => {
  const a = '01A210E6-4009-7027-90AE-FE35FDE24451';
  const b = '01a210e6-4031-7006-aae2-594c1e43267c';
  const tree = {
    logic: 'OR',
    groups: [
      {
        filters: [
          { field: `segment.${a}`, operator: 'memberOfSegment' },
          { field: 'data.x', value: b },
        ],
      },
      {
        filters: [{ field: 'segment.not-a-uuid' }, 'junk'],
        conditions: {
          logic: 'AND',
          groups: [{ filters: [{ field: 'email', operator: 'NOTMEMBEROFSEGMENT', value: b }] }],
        },
      },
    ],
  };
  expect(segmentReferences(tree)).toEqual([
    { id: a.toLowerCase(), field: 'condition.groups.0.filters.0.field' },
    { id: b, field: 'condition.groups.1.conditions.groups.0.filters.0.value' },
  ]);
  expect(segmentReferences(null)).toEqual([]);
  expect(segmentReferences({ groups: 'x' })).toEqual([]);
});
