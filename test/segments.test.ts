import { call, eventually, expectEnvelope, newTenant, uniqueEmail, type Tenant } from './support/client.js';
import { importCsv } from './support/csv.js';
import { verifiedDomain } from './support/messaging.js';

const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });
const planIs = (plan: string) => tree({ field: 'data.plan', operator: 'equals', value: plan });

async function contact(t: Tenant, email: string, data: object = {}): Promise<string> {
  const res = await call('POST', '/contacts', { email, data }, { key: t.secretKey });
  return res.body.id;
}

const eventNames = async (t: Tenant, contactId: string): Promise<string[]> =>
  (await call('GET', `/events/contact/${contactId}`, undefined, { key: t.secretKey })).body.data.map(
    (e: { name: string }) => e.name,
  );

describe('segments', () => {
  let t: Tenant;
  let other: Tenant;
  const s = (method: string, url: string, body?: unknown) => call(method, url, body, { key: t.secretKey });
  beforeAll(async () => {
    [t, other] = await Promise.all([newTenant(), newTenant()]);
    await contact(t, 'pro1@example.com', { plan: 'pro' });
    await contact(t, 'pro2@example.com', { plan: 'pro' });
    await contact(t, 'free@example.com', { plan: 'free' });
  });

  test('create, get, list newest first, patch and delete a dynamic segment', async () => {
    const created = await s('POST', '/segments', {
      name: 'Pro users',
      description: 'paying',
      condition: planIs('pro'),
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Pro users',
      description: 'paying',
      type: 'DYNAMIC',
      trackMembership: false,
      memberCount: 2,
      slug: 'pro-users',
      projectId: t.projectId,
      condition: planIs('pro'),
    });
    const second = await s('POST', '/segments', { name: 'Pro users', condition: planIs('free') });
    expect(second.body.slug).toBe('pro-users-2');
    const list = await s('GET', '/segments');
    expect(list.body.map((x: { id: string }) => x.id).slice(0, 2)).toEqual([second.body.id, created.body.id]);
    const id = created.body.id;
    const patched = await s('PATCH', `/segments/${id}`, {
      name: 'Renamed',
      description: null,
      condition: planIs('free'),
    });
    expect(patched.body).toMatchObject({ name: 'Renamed', description: null, slug: 'pro-users', memberCount: 1 });
    expect((await s('GET', `/segments/${id}`)).body.memberCount).toBe(1);
    expect((await s('DELETE', `/segments/${id}`)).status).toBe(204);
    expectEnvelope(await s('GET', `/segments/${id}`), 404, 'RESOURCE_NOT_FOUND');
  });

  test('members of a dynamic segment are evaluated live, in offset pages', async () => {
    const seg = (await s('POST', '/segments', { name: 'Live pro', condition: planIs('pro') })).body;
    const page = await s('GET', `/segments/${seg.id}/contacts?page=2&pageSize=1`);
    expect(page.body).toMatchObject({ total: 2, page: 2, pageSize: 1, totalPages: 2 });
    expect(page.body.data).toHaveLength(1);
    expect((await s('GET', `/segments/${seg.id}/contacts?pageSize=500`)).body.pageSize).toBe(100);
    const late = await contact(t, uniqueEmail('late'), { plan: 'pro' });
    const all = await s('GET', `/segments/${seg.id}/contacts`);
    expect(all.body.data.map((c: { id: string }) => c.id)).toContain(late);
    expectEnvelope(await s('GET', `/segments/${seg.id}/contacts?page=0`), 422, 'VALIDATION_ERROR');
    expectEnvelope(await s('GET', `/segments/${seg.id}/contacts?pageSize=abc`), 422, 'VALIDATION_ERROR');
    // Refresh updates the cached count only.
    expect((await s('POST', `/segments/${seg.id}/refresh`)).body.memberCount).toBe(3);
  });

  test('static members: add (created, not found), list, remove; 400 on a dynamic segment', async () => {
    const seg = (await s('POST', '/segments', { name: 'Hand picked', type: 'STATIC', condition: planIs('pro') })).body;
    expect(seg).toMatchObject({ type: 'STATIC', condition: null, memberCount: 0 });
    const fresh = uniqueEmail('fresh');
    const added = await s('POST', `/segments/${seg.id}/members`, {
      emails: ['free@example.com', 'nobody@example.com'],
    });
    expect(added.body).toEqual({ added: 1, created: 0, notFound: ['nobody@example.com'] });
    const created = await s('POST', `/segments/${seg.id}/members`, {
      emails: [fresh, 'FREE@example.com'],
      createMissing: true,
    });
    expect(created.body).toEqual({ added: 1, created: 1, notFound: [] });
    const members = await s('GET', `/segments/${seg.id}/contacts`);
    expect(members.body.data.map((c: { email: string }) => c.email).sort()).toEqual([fresh, 'free@example.com'].sort());
    expect((await s('GET', `/segments/${seg.id}`)).body.memberCount).toBe(2);
    // A segment.<id> filter sees the stored members anywhere.
    const filtered = await s('POST', '/contacts/filter', {
      condition: tree({ field: `segment.${seg.id}`, operator: 'memberOfSegment' }),
    });
    expect(filtered.body.total).toBe(2);
    expect((await s('DELETE', `/segments/${seg.id}/members`, { emails: [fresh] })).body).toEqual({ removed: 1 });
    const dynamic = (await s('POST', '/segments', { name: 'Dyn', condition: planIs('pro') })).body;
    expectEnvelope(
      await s('POST', `/segments/${dynamic.id}/members`, { emails: ['free@example.com'] }),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await s('DELETE', `/segments/${dynamic.id}/members`, { emails: ['free@example.com'] }),
      400,
      'BAD_REQUEST',
    );
    expectEnvelope(
      await s('POST', `/segments/${seg.id}/members`, { emails: 'free@example.com' }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await s('POST', `/segments/${seg.id}/members`, { emails: ['not-an-email'] }),
      422,
      'VALIDATION_ERROR',
    );
  });

  test('a dynamic segment referenced by segment.<id> is evaluated by its condition; cycles are 400', async () => {
    const a = (await s('POST', '/segments', { name: 'A', condition: planIs('pro') })).body;
    const b = (
      await s('POST', '/segments', {
        name: 'B',
        condition: tree({ field: `segment.${a.id}`, operator: 'memberOfSegment' }),
      })
    ).body;
    expect(b.memberCount).toBeGreaterThanOrEqual(2);
    const cycle = await s('PATCH', `/segments/${a.id}`, {
      condition: tree({ field: `segment.${b.id}`, operator: 'memberOfSegment' }),
    });
    expectEnvelope(cycle, 400, 'BAD_REQUEST');
    expect((await s('GET', `/segments/${a.id}`)).body.condition).toEqual(planIs('pro'));
    // A referenced segment is not deleted from under B (B would silently match nobody): 409 naming B.
    const referenced = await s('DELETE', `/segments/${a.id}`);
    expectEnvelope(referenced, 409, 'CONFLICT');
    expect(referenced.body.error.details).toEqual({ segments: [b.id] });
    expect((await s('GET', `/segments/${a.id}`)).status).toBe(200);
    expect((await s('DELETE', `/segments/${b.id}`)).status).toBe(204);
    expect((await s('DELETE', `/segments/${a.id}`)).status).toBe(204);
  });

  test("a condition naming another project's, a deleted or an unknown segment is a 422 naming it", async () => {
    const theirs = (await call('POST', '/segments', { name: 'Theirs', type: 'STATIC' }, { key: other.secretKey })).body;
    const gone = (await s('POST', '/segments', { name: 'Gone', condition: planIs('pro') })).body;
    expect((await s('DELETE', `/segments/${gone.id}`)).status).toBe(204);
    const before = (await s('GET', '/segments')).body.length;
    for (const id of [theirs.id, gone.id, '00000000-0000-7000-8000-000000000000']) {
      const named = await s('POST', '/segments', {
        name: 'Dangling',
        condition: tree(
          { field: 'data.plan', operator: 'equals', value: 'pro' },
          { field: 'email', operator: 'notMemberOfSegment', value: id.toUpperCase() },
        ),
      });
      expectEnvelope(named, 422, 'VALIDATION_ERROR');
      expect(named.body.error.errors).toEqual([
        expect.objectContaining({ field: 'condition.groups.0.filters.1.value', code: 'not_found', received: id }),
      ]);
    }
    expect((await s('GET', '/segments')).body.length).toBe(before);
    const mine = (await s('POST', '/segments', { name: 'Kept', condition: planIs('pro') })).body;
    const patched = await s('PATCH', `/segments/${mine.id}`, {
      condition: { logic: 'OR', groups: [{ filters: [], conditions: tree({ field: `segment.${theirs.id}` }) }] },
    });
    expectEnvelope(patched, 422, 'VALIDATION_ERROR');
    expect(patched.body.error.errors[0].field).toBe('condition.groups.0.conditions.groups.0.filters.0.field');
    expect((await s('GET', `/segments/${mine.id}`)).body.condition).toEqual(planIs('pro'));
  });

  test('bad input: flat 400 without a condition, 422 for wrong types and bad trees, 404 for foreign ids', async () => {
    const before = (await s('GET', '/segments')).body.length;
    const flat = await s('POST', '/segments', { name: 'No condition' });
    expect(flat.status).toBe(400);
    expect(flat.body).toEqual({ error: expect.any(String) });
    expect((await s('POST', '/segments', { name: 'Array', condition: [] })).status).toBe(400);
    expectEnvelope(await s('POST', '/segments', { name: 5, condition: planIs('pro') }), 422, 'VALIDATION_ERROR');
    expectEnvelope(await s('POST', '/segments', { condition: planIs('pro') }), 422, 'VALIDATION_ERROR');
    expectEnvelope(
      await s('POST', '/segments', { name: 'x'.repeat(101), condition: planIs('pro') }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await s('POST', '/segments', { name: 'T', type: 'OTHER', condition: planIs('pro') }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await s('POST', '/segments', { name: 'T', trackMembership: 'yes', condition: planIs('pro') }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await s('POST', '/segments', { name: 'T', condition: tree({ field: 'data.x', operator: 'nope' }) }),
      422,
      'VALIDATION_ERROR',
    );
    expectEnvelope(
      await s('POST', '/segments', { name: 'N\u0000UL', condition: planIs('pro') }),
      422,
      'VALIDATION_ERROR',
    );
    let deep: object = planIs('pro');
    for (let i = 0; i < 8; i++) deep = { logic: 'AND', groups: [{ filters: [], conditions: deep }] };
    expectEnvelope(await s('POST', '/segments', { name: 'Deep', condition: deep }), 422, 'VALIDATION_ERROR');
    expect((await s('GET', '/segments')).body.length).toBe(before);

    const mine = (await s('POST', '/segments', { name: 'Mine', condition: planIs('pro') })).body;
    const foreign = (key: string) => ({ key });
    for (const [method, path] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['GET', '/contacts'],
      ['POST', '/refresh'],
    ]) {
      expectEnvelope(
        await call(
          method,
          `/segments/${mine.id}${path}`,
          method === 'PATCH' ? { name: 'x' } : undefined,
          foreign(other.secretKey),
        ),
        404,
        'RESOURCE_NOT_FOUND',
      );
      expectEnvelope(
        await s(
          method,
          `/segments/00000000-0000-7000-8000-000000000000${path}`,
          method === 'PATCH' ? { name: 'x' } : undefined,
        ),
        404,
        'RESOURCE_NOT_FOUND',
      );
    }
    expectEnvelope(await s('GET', '/segments/not-a-uuid'), 404, 'RESOURCE_NOT_FOUND');
    expectEnvelope(await s('PATCH', `/segments/${mine.id}`, { condition: 'x' }), 422, 'VALIDATION_ERROR');
    const listed = await s('PATCH', `/segments/${mine.id}`, [{ name: 'x' }]);
    expectEnvelope(listed, 422, 'VALIDATION_ERROR');
    expect(listed.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_type' });
    expect((await s('GET', `/segments/${mine.id}`)).body.updatedAt).toBe(mine.updatedAt);
    expect((await s('GET', `/segments/${mine.id}`)).body.name).toBe('Mine');
  });

  test('tracked: /v1/track and data changes fire entry/exit in seconds; compute; refresh records nothing', async () => {
    const email = uniqueEmail('tracked');
    const id = await contact(t, email, { tier: 'basic' });
    const seg = (
      await s('POST', '/segments', {
        name: 'Buyers Club',
        trackMembership: true,
        condition: {
          logic: 'OR',
          groups: [
            { filters: [{ field: 'event.bought', operator: 'triggered' }] },
            { filters: [{ field: 'data.tier', operator: 'equals', value: 'gold' }] },
          ],
        },
      })
    ).body;
    expect(seg).toMatchObject({ trackMembership: true, slug: 'buyers-club', memberCount: 0 });

    expect((await call('POST', '/v1/track', { email, event: 'bought' }, { key: t.publicKey })).status).toBe(200);
    await eventually(
      async () => ((await eventNames(t, id)).includes('segment.buyers-club.entry') ? true : undefined),
      10_000,
      'entry event',
    );
    expect((await s('GET', `/segments/${seg.id}`)).body.memberCount).toBe(1);

    // Leaving: the only way out of this condition is deleting the event; then compute records the exit.
    await s('DELETE', '/events/bought');
    const computed = await s('POST', `/segments/${seg.id}/compute`);
    expect(computed.body).toMatchObject({ entered: 0, exited: 1, memberCount: 0 });
    await eventually(
      async () => ((await eventNames(t, id)).includes('segment.buyers-club.exit') ? true : undefined),
      10_000,
      'exit event',
    );

    // A data change moves the contact in again, incrementally.
    await s('PATCH', `/contacts/${id}`, { data: { tier: 'gold' } });
    await eventually(
      async () =>
        (await eventNames(t, id)).filter((n) => n === 'segment.buyers-club.entry').length === 2 ? true : undefined,
      10_000,
      'second entry',
    );
    await s('PATCH', `/contacts/${id}`, { data: { tier: 'basic' } });
    await eventually(
      async () =>
        (await eventNames(t, id)).filter((n) => n === 'segment.buyers-club.exit').length === 2 ? true : undefined,
      10_000,
      'second exit',
    );

    // Refresh: count only, no events.
    const eventsBefore = (await eventNames(t, id)).length;
    await s('PATCH', `/contacts/${id}`, { data: { tier: 'gold' } });
    await eventually(
      async () => ((await eventNames(t, id)).length === eventsBefore + 1 ? true : undefined),
      10_000,
      'third entry',
    );
    expect((await s('POST', `/segments/${seg.id}/refresh`)).body.memberCount).toBe(1);
    expect((await s('POST', `/segments/${seg.id}/compute`)).body).toMatchObject({ entered: 0, exited: 0 });
    expect((await eventNames(t, id)).length).toBe(eventsBefore + 1);
    expectEnvelope(
      await call('POST', '/v1/track', { email, event: 'segment.buyers-club.entry' }, { key: t.publicKey }),
      422,
      'VALIDATION_ERROR',
    );

    const untracked = (await s('POST', '/segments', { name: 'Untracked', condition: planIs('pro') })).body;
    expectEnvelope(await s('POST', `/segments/${untracked.id}/compute`), 400, 'BAD_REQUEST');
  });

  test('tracked STATIC: members added and removed record entry and exit; tracking turned on is silent', async () => {
    const [early, late] = [uniqueEmail('early'), uniqueEmail('late')];
    const [earlyId, lateId] = [await contact(t, early), await contact(t, late)];
    const seg = (await s('POST', '/segments', { name: 'Beta Testers', type: 'STATIC' })).body;
    expect((await s('POST', `/segments/${seg.id}/members`, { emails: [early] })).body.added).toBe(1);
    const on = await s('PATCH', `/segments/${seg.id}`, { trackMembership: true });
    expect(on.body).toMatchObject({ trackMembership: true, memberCount: 1 });

    expect((await s('POST', `/segments/${seg.id}/members`, { emails: [late, early] })).body.added).toBe(1);
    await eventually(
      async () => ((await eventNames(t, lateId)).includes('segment.beta-testers.entry') ? true : undefined),
      10_000,
      'entry event',
    );
    expect((await s('GET', `/segments/${seg.id}`)).body.memberCount).toBe(2);
    expect((await s('DELETE', `/segments/${seg.id}/members`, { emails: [early] })).body.removed).toBe(1);
    await eventually(
      async () => ((await eventNames(t, earlyId)).includes('segment.beta-testers.exit') ? true : undefined),
      10_000,
      'exit event',
    );
    // The early member joined before tracking began: no entry for it, one entry for the late one.
    expect(await eventNames(t, earlyId)).not.toContain('segment.beta-testers.entry');
    expect((await eventNames(t, lateId)).filter((n) => n === 'segment.beta-testers.entry')).toHaveLength(1);
    expect((await s('GET', `/segments/${seg.id}`)).body.memberCount).toBe(1);
    // compute (what the console's count button asks of a tracked segment) finds nothing left to record.
    const computed = await s('POST', `/segments/${seg.id}/compute`);
    expect(computed.status).toBe(200);
    expect(computed.body).toMatchObject({ entered: 0, exited: 0, memberCount: 1, type: 'STATIC' });
    const untracked = (await s('POST', '/segments', { name: 'Untracked static', type: 'STATIC' })).body;
    expectEnvelope(await s('POST', `/segments/${untracked.id}/compute`), 400, 'BAD_REQUEST');
  });

  test('tracked: a sent email moves its contact in (email.* events come many per message: events.emails)', async () => {
    const fresh = await newTenant();
    const seg = (
      await call(
        'POST',
        '/segments',
        {
          name: 'Mailed',
          trackMembership: true,
          condition: tree({ field: 'event.email.sent', operator: 'triggered' }),
        },
        { key: fresh.secretKey },
      )
    ).body;
    expect(seg).toMatchObject({ trackMembership: true, slug: 'mailed' });
    const { domain } = await verifiedDomain(fresh);
    const to = uniqueEmail('mailed');
    const sent = await call(
      'POST',
      '/v1/send',
      { to, from: `hi@${domain}`, subject: 'Hi', body: '<p>hi</p>' },
      { key: fresh.secretKey },
    );
    expect(sent.status).toBe(200);
    const contactId = sent.body.data.emails[0].contact.id;
    await eventually(
      async () => ((await eventNames(fresh, contactId)).includes('segment.mailed.entry') ? true : undefined),
      15_000,
      'entry after the email was sent',
    );
    expect(await eventNames(fresh, contactId)).toContain('email.sent');
  });

  test('tracked: contacts a CSV import creates enter in seconds (contacts.imported carries their ids)', async () => {
    const fresh = await newTenant();
    const seg = (
      await call(
        'POST',
        '/segments',
        {
          name: 'Gold',
          trackMembership: true,
          condition: tree({ field: 'data.tier', operator: 'equals', value: 'gold' }),
        },
        { key: fresh.secretKey },
      )
    ).body;
    const job = await importCsv(
      fresh,
      'email,tier\ngold1@example.com,gold\nbasic@example.com,basic\ngold2@example.com,gold\n',
    );
    expect(job).toMatchObject({ status: 'completed', imported: 3 });
    await eventually(
      async () => {
        const got = await call('GET', `/segments/${seg.id}`, undefined, { key: fresh.secretKey });
        return got.body.memberCount === 2 ? true : undefined;
      },
      10_000,
      'imported contacts entered',
    );
    const contacts = await call('GET', '/contacts?limit=10', undefined, { key: fresh.secretKey });
    expect(contacts.body.data).toHaveLength(3);
    for (const c of contacts.body.data as Array<{ id: string; email: string }>) {
      if (!c.email.startsWith('gold')) {
        expect(await eventNames(fresh, c.id)).not.toContain('segment.gold.entry');
        continue;
      }
      await eventually(
        async () => ((await eventNames(fresh, c.id)).includes('segment.gold.entry') ? true : undefined),
        10_000,
        'entry event',
      );
    }
  });
});
