import { AppError } from '@svc/lib/errors';
import { allowed, notAllowed } from './states.js';

describe('campaign state moves', () => {
  test('PUT and send start from DRAFT only; cancel from SCHEDULED or SENDING; delete from all but SENDING', () => {
    expect(['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'].filter((s) => allowed('send', s as never))).toEqual([
      'DRAFT',
    ]);
    expect(allowed('update', 'SCHEDULED')).toBe(false);
    expect(allowed('cancel', 'SCHEDULED')).toBe(true);
    expect(allowed('cancel', 'SENDING')).toBe(true);
    expect(allowed('cancel', 'SENT')).toBe(false);
    expect(allowed('delete', 'SENDING')).toBe(false);
    expect(allowed('delete', 'SCHEDULED')).toBe(true);
  });

  test('a refused move is a 409 whose message names the current state', () => {
    const err = notAllowed('cancel', 'SENT');
    expect(err).toBeInstanceOf(AppError);
    expect(err.status).toBe(409);
    expect(err.message).toContain('SENT');
    expect(err.details).toEqual({ status: 'SENT', allowedFrom: ['SCHEDULED', 'SENDING'] });
  });
});
