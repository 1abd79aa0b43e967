import { isAppError } from '@svc/lib/errors';
import { filterReference } from './references.js';

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
