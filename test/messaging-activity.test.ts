import { call, eventually, expectEnvelope, newTenant, uniqueEmail } from './support/client.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';

describe('activity feed', () => {
  test('sends and tracked events land in the feed, newest first, with type filters and cursor pages', async () => {
    const t = await newTenant();
    const domain = (await verifiedDomain(t)).domain;
    const to = uniqueEmail('feed');
    const sent = await call(
      'POST',
      '/v1/send',
      { to, from: `hi@${domain}`, subject: 's', body: 'b' },
      { key: t.secretKey },
    );
    await waitForMail(to);
    for (const event of ['signup', 'purchase']) {
      expect((await call('POST', '/v1/track', { email: to, event }, { key: t.publicKey })).status).toBe(200);
    }
    const feed = await eventually(async () => {
      const res = await call('GET', '/activity', undefined, { key: t.secretKey });
      return res.body.total === 3 ? res.body : undefined;
    });
    expect(feed.data.map((a: { type: string; name: string | null }) => [a.type, a.name])).toEqual([
      ['event', 'purchase'],
      ['event', 'signup'],
      ['email.sent', null],
    ]);
    expect(feed.data[2]).toMatchObject({
      emailId: sent.body.data.emails[0].email,
      contactId: sent.body.data.emails[0].contact.id,
      email: to,
    });

    const page1 = await call('GET', '/activity?limit=2', undefined, { key: t.secretKey });
    expect(page1.body).toMatchObject({ hasMore: true, total: 3 });
    expect(page1.body.data).toHaveLength(2);
    const page2 = await call('GET', `/activity?limit=2&cursor=${page1.body.cursor}`, undefined, { key: t.secretKey });
    expect(page2.body).toMatchObject({ hasMore: false, total: 0, cursor: '' });
    expect(page2.body.data.map((a: { type: string }) => a.type)).toEqual(['email.sent']);

    const emailsOnly = await call('GET', '/activity?type=email.sent,email.open', undefined, { key: t.secretKey });
    expect(emailsOnly.body.data).toHaveLength(1);
    expect((await call('GET', '/activity/types', undefined, { key: t.secretKey })).body).toEqual({
      types: ['email.sent', 'event'],
    });
    expect((await call('GET', '/activity/recent-count', undefined, { key: t.secretKey })).body.count).toBe(3);
    expect((await call('GET', '/activity/recent-count?minutes=60', undefined, { key: t.secretKey })).body.count).toBe(
      3,
    );
    const stats = await call('GET', '/activity/stats?days=7', undefined, { key: t.secretKey });
    expect(stats.body).toMatchObject({
      days: 7,
      total: 3,
      byType: { event: 2, 'email.sent': 1 },
      emails: { sent: 1, queued: 0 },
    });
    expect((await call('GET', '/activity/upcoming', undefined, { key: t.secretKey })).body).toEqual({ data: [] });

    // Another project sees none of it.
    const other = await newTenant();
    expect((await call('GET', '/activity', undefined, { key: other.secretKey })).body).toMatchObject({
      data: [],
      total: 0,
      hasMore: false,
    });
  });

  test('bad parameters: a malformed cursor is 400, a malformed limit or days 422; a public key 401', async () => {
    const t = await newTenant();
    expectEnvelope(await call('GET', '/activity?cursor=garbage', undefined, { key: t.secretKey }), 400, 'BAD_REQUEST');
    expectEnvelope(await call('GET', '/activity?limit=ten', undefined, { key: t.secretKey }), 422, 'VALIDATION_ERROR');
    expectEnvelope(
      await call('GET', '/activity/stats?days=-1', undefined, { key: t.secretKey }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(await call('GET', '/activity', undefined, { key: t.publicKey }), 401, 'INVALID_API_KEY');
    expect((await call('GET', '/activity?limit=500', undefined, { key: t.secretKey })).status).toBe(200);
  });
});
