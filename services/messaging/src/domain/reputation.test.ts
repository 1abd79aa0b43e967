import { judge, rates, THRESHOLDS } from './reputation.js';

describe('judge: bounce and complaint thresholds', () => {
  test('below the minimum volume nothing is judged, however bad the rates', () => {
    expect(judge({ sent: 99, bounced: 99, complained: 99 }, 100)).toBeNull();
  });

  test('rates under 5 % bounces and 0.3 % complaints pass', () => {
    expect(judge({ sent: 1000, bounced: 49, complained: 2 }, 100)).toBeNull();
  });

  test('a bounce rate reaching 5 % suspends, with the rate and a reason naming it', () => {
    expect(judge({ sent: 1000, bounced: 50, complained: 0 }, 100)).toEqual({
      metric: 'bounce_rate',
      rate: 0.05,
      threshold: THRESHOLDS.bounceRate,
      sent: 1000,
      reason: 'bounce rate 5.00 % of 1000 emails reached the 5.00 % limit',
    });
  });

  test('a complaint rate reaching 0.3 % suspends, and is named before bounces', () => {
    const v = judge({ sent: 1000, bounced: 200, complained: 3 }, 100);
    expect(v).toMatchObject({ metric: 'complaint_rate', rate: 0.003, threshold: 0.003 });
    expect(v?.reason).toBe('complaint rate 0.30 % of 1000 emails reached the 0.30 % limit');
  });

  test('rates of an empty window are 0, not NaN', () => {
    expect(rates(7, { sent: 0, bounced: 0, complained: 0 })).toMatchObject({ bounceRate: 0, complaintRate: 0 });
  });
});
