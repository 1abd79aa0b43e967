import { isAppError } from '@svc/lib/errors';
import { filterReference, segmentReferences } from './references.js';

test('a field is referenced by filters on it and below it; an event by event.<name>', () => {
  expect(filterReference({ field: 'data.profile' })).toEqual({ exact: ['data.profile'], prefix: 'data.profile.' });
  expect(filterReference({ field: 'email' })).toEqual({ exact: ['email'], prefix: null });
  expect(filterReference({ eventName: 'signup' })).toEqual({ exact: ['event.signup'], prefix: null });
  expect(filterReference({ eventName: 'email.open' })).toEqual({
    exact: ['event.email.open', 'email.open'],
    prefix: null,
  });
});

test.each([{}, { field: 'a', eventName: 'b' }, { field: ' ' }, { eventName: 'x'.repeat(1001) }])(
  '%p is a 400',
  (ref) => {
    let status = 0;
    try {
      filterReference(ref);
    } catch (err) {
      if (isAppError(err)) status = err.status;
    }
    expect(status).toBe(400);
  },
);

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
