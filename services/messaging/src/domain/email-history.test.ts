import type { EmailAttemptRow, EmailSummaryRow } from '../store/emails-store.js';
import { withheldBecause } from './email-batch.js';
import { parseEmailFilter, reasonOf, timelineOf } from './email-history.js';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

const row = (over: Partial<EmailSummaryRow> = {}): EmailSummaryRow =>
  ({
    id: '00000000-0000-4000-8000-000000000001',
    status: 'queued',
    bounce_reason: null,
    last_error: null,
    created_at: at(0),
    sent_at: null,
    delivered_at: null,
    first_opened_at: null,
    first_clicked_at: null,
    bounced_at: null,
    complained_at: null,
    open_count: 0,
    click_count: 0,
    ...over,
  }) as EmailSummaryRow;

const attempt = (n: number, outcome: EmailAttemptRow['outcome'], s: number, answer = ''): EmailAttemptRow => ({
  attempt: n,
  outcome,
  smtp_code: null,
  smtp_response: answer,
  at: at(s),
});

describe('withheldBecause', () => {
  test('an earlier bounce or complaint withholds any mail; an unsubscribed contact only MARKETING mail', () => {
    expect(withheldBecause('TRANSACTIONAL', true, 'bounce')).toBe('bounced');
    expect(withheldBecause('TRANSACTIONAL', true, 'complaint')).toBe('complained');
    expect(withheldBecause('MARKETING', false, undefined)).toBe('unsubscribed');
    expect(withheldBecause('TRANSACTIONAL', false, undefined)).toBeNull();
    expect(withheldBecause('MARKETING', true, undefined)).toBeNull();
  });
});

describe('reasonOf', () => {
  test('reads the reason codes and the texts written before them; only suppressed emails have one', () => {
    expect(reasonOf(row({ status: 'suppressed', bounce_reason: 'unsubscribed' }))).toBe('unsubscribed');
    expect(reasonOf(row({ status: 'suppressed', bounce_reason: 'contact is unsubscribed' }))).toBe('unsubscribed');
    expect(reasonOf(row({ status: 'suppressed', bounce_reason: 'complained' }))).toBe('complained');
    expect(reasonOf(row({ status: 'suppressed', bounce_reason: 'bounced' }))).toBe('bounced');
    expect(reasonOf(row({ status: 'suppressed', bounce_reason: 'suppressed: earlier bounce or complaint' }))).toBe(
      'bounced',
    );
    expect(reasonOf(row({ status: 'bounced', bounce_reason: '550 gone' }))).toBeNull();
  });
});

describe('timelineOf', () => {
  test('queued, each attempt, then delivery, first open and click, in time order', () => {
    const e = row({
      status: 'delivered',
      sent_at: at(3),
      delivered_at: at(4),
      first_opened_at: at(6),
      first_clicked_at: at(5),
      open_count: 2,
      click_count: 1,
    });
    const t = timelineOf(e, [attempt(1, 'retry', 1, '451 later'), attempt(2, 'sent', 3)]);
    expect(t.map((x) => [x.type, x.at.getUTCSeconds()])).toEqual([
      ['queued', 0],
      ['deferred', 1],
      ['sent', 3],
      ['delivered', 4],
      ['clicked', 5],
      ['opened', 6],
    ]);
    expect(t[1].detail).toBe('451 later');
    expect(t[5].detail).toBe('2 open(s)');
  });

  test('a suppressed email has one step with its reason; a row without attempts shows sent and bounce times', () => {
    expect(timelineOf(row({ status: 'suppressed', bounce_reason: 'unsubscribed' }), [])).toEqual([
      { type: 'suppressed', at: at(0), detail: 'unsubscribed' },
    ]);
    const old = timelineOf(row({ status: 'bounced', sent_at: at(1), bounced_at: at(2), bounce_reason: 'x' }), []);
    expect(old.map((x) => x.type)).toEqual(['queued', 'sent', 'bounced']);
  });
});

describe('parseEmailFilter', () => {
  test('statuses (comma-separated, deduplicated), uuid ids and dates; bad values are 422 or 400', () => {
    const id = '00000000-0000-4000-8000-000000000002';
    const f = parseEmailFilter({ status: 'sent, Delivered,sent', contactId: id, from: '2026-01-01', to: '2026-01-02' });
    expect(f.statuses).toEqual(['sent', 'delivered']);
    expect(f.contactId).toBe(id);
    expect(f.from?.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(f.to?.toISOString()).toBe('2026-01-02T23:59:59.999Z');
    expect(() => parseEmailFilter({ status: 'lost' })).toThrow(expect.objectContaining({ status: 422 }));
    expect(() => parseEmailFilter({ templateId: 'x' })).toThrow(expect.objectContaining({ status: 422 }));
    expect(() => parseEmailFilter({ from: 'yesterday' })).toThrow(expect.objectContaining({ status: 400 }));
    expect(() => parseEmailFilter({ from: '2026-01-02', to: '2026-01-01' })).toThrow(
      expect.objectContaining({ status: 400 }),
    );
  });
});
