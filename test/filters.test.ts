import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { createRpcClient } from '@svc/lib/rpc-client';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { connect } from 'nats';
import { call, eventually, expectEnvelope, newTenant, platform, type Tenant } from './support/client.js';

const filter = (t: Tenant, condition: unknown) =>
  call('POST', '/contacts/filter', { condition, limit: 100 }, { key: t.secretKey });
const emails = (res: { body: { data: Array<{ email: string }> } }) => res.body.data.map((c) => c.email).sort();
const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });

describe('filter trees over contacts, events and email activity', () => {
  let t: Tenant;
  beforeAll(async () => {
    t = await newTenant();
    const old = new Date(Date.now() - 40 * 86400_000).toISOString();
    const recent = new Date(Date.now() - 2 * 86400_000).toISOString();
    await call(
      'POST',
      '/contacts',
      { email: 'a@example.com', data: { plan: 'pro', seats: 10, profile: { tier: 'gold' }, lastLogin: recent } },
      { key: t.secretKey },
    );
    await call(
      'POST',
      '/contacts',
      { email: 'b@example.com', data: { plan: 'free', seats: 2, profile: { tier: 'silver' }, lastLogin: old } },
      { key: t.secretKey },
    );
    await call(
      'POST',
      '/contacts',
      { email: 'c@example.com', subscribed: false, data: { plan: 'pro', seats: 'many', lastLogin: '2024-01-01' } },
      { key: t.secretKey },
    );
    await call('POST', '/v1/track', { email: 'a@example.com', event: 'purchase' }, { key: t.publicKey });
    await call('POST', '/v1/track', { email: 'b@example.com', event: 'login' }, { key: t.publicKey });
  });

  test('value operators on standard and nested data fields', async () => {
    expect(emails(await filter(t, tree({ field: 'data.plan', operator: 'equals', value: 'pro' })))).toEqual([
      'a@example.com',
      'c@example.com',
    ]);
    expect(emails(await filter(t, tree({ field: 'data.seats', operator: 'greaterThan', value: 5 })))).toEqual([
      'a@example.com',
    ]);
    expect(emails(await filter(t, tree({ field: 'data.seats', operator: 'lt', value: 5 })))).toEqual(['b@example.com']);
    expect(emails(await filter(t, tree({ field: 'data.profile.tier', operator: 'equals', value: 'gold' })))).toEqual([
      'a@example.com',
    ]);
    expect(emails(await filter(t, tree({ field: 'data.profile.tier', operator: 'notExists' })))).toEqual([
      'c@example.com',
    ]);
    expect(emails(await filter(t, tree({ field: 'email', operator: 'contains', value: 'B@EXAMPLE' })))).toEqual([
      'b@example.com',
    ]);
    expect(emails(await filter(t, tree({ field: 'subscribed', operator: 'equals', value: false })))).toEqual([
      'c@example.com',
    ]);
    expect(
      emails(await filter(t, tree({ field: 'createdAt', operator: 'within', value: 1, unit: 'days' }))),
    ).toHaveLength(3);
  });

  test('within and olderThan read only full ISO 8601 date-times', async () => {
    expect(
      emails(await filter(t, tree({ field: 'data.lastLogin', operator: 'within', value: 7, unit: 'days' }))),
    ).toEqual(['a@example.com']);
    expect(
      emails(await filter(t, tree({ field: 'data.lastLogin', operator: 'olderThan', value: 30, unit: 'days' }))),
    ).toEqual(['b@example.com']);
  });

  test('AND / OR logic and nested conditions', async () => {
    const or = {
      logic: 'OR',
      groups: [
        { filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] },
        { filters: [{ field: 'subscribed', operator: 'equals', value: false }] },
      ],
    };
    expect(emails(await filter(t, or))).toEqual(['b@example.com', 'c@example.com']);
    const nested = {
      logic: 'AND',
      groups: [
        {
          filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
          conditions: {
            logic: 'OR',
            groups: [{ filters: [{ field: 'data.seats', operator: 'greaterThan', value: 1 }] }],
          },
        },
      ],
    };
    expect(emails(await filter(t, nested))).toEqual(['a@example.com']);
  });

  test('triggered operators on events', async () => {
    expect(emails(await filter(t, tree({ field: 'event.purchase', operator: 'triggered' })))).toEqual([
      'a@example.com',
    ]);
    expect(emails(await filter(t, tree({ field: 'event.purchase', operator: 'notTriggered' })))).toEqual([
      'b@example.com',
      'c@example.com',
    ]);
    expect(
      emails(await filter(t, tree({ field: 'event.login', operator: 'triggeredWithin', value: 1, unit: 'hours' }))),
    ).toEqual(['b@example.com']);
    expect(
      emails(await filter(t, tree({ field: 'event.login', operator: 'triggeredOlderThan', value: 1, unit: 'days' }))),
    ).toEqual([]);
  });

  test('messaging lifecycle messages on the bus feed email.<activity> filters and email.* events', async () => {
    const a = (await call('POST', '/contacts/lookup', { emails: ['a@example.com'] }, { key: t.secretKey })).body
      .found[0];
    const nc = await connect({ servers: platform.env.NATS_URL });
    const js = nc.jetstream();
    const payload = {
      projectId: t.projectId,
      contactId: a.id,
      emailId: 'email-1',
      type: 'open',
      occurredAt: new Date().toISOString(),
      data: { isFirstOpen: true },
    };
    // Published twice with one id: JetStream dedupes, and the consumer is idempotent anyway.
    await js.publish(`${platform.runId}.emails.open`, JSON.stringify(payload), { msgID: `test-open-${a.id}` });
    await js.publish(`${platform.runId}.emails.open`, JSON.stringify(payload), { msgID: `test-open-${a.id}` });
    await nc.drain();
    await eventually(async () => {
      const res = await filter(t, tree({ field: 'email.open', operator: 'triggered' }));
      return emails(res).length === 1 ? true : undefined;
    });
    expect(emails(await filter(t, tree({ field: 'email.open', operator: 'triggered' })))).toEqual(['a@example.com']);
    const events = await call('GET', `/events/contact/${a.id}`, undefined, { key: t.secretKey });
    expect(events.body.data.filter((e: { name: string }) => e.name === 'email.open')).toHaveLength(1);
  });

  test('the Count and Stream RPCs serve campaigns and segments the matching contact ids', async () => {
    const url = `http://127.0.0.1:${platform.env.CONTACTS_PORT}`;
    const client = createRpcClient(ContactsService, url, { serviceToken: platform.env.SERVICE_TOKEN });
    const condition = fromJson(
      ValueSchema,
      tree({ field: 'data.plan', operator: 'equals', value: 'pro' }) as JsonValue,
    );
    expect((await client.count({ projectId: t.projectId, condition })).count).toBe(2n);
    const streamed: string[] = [];
    for await (const batch of client.stream({ projectId: t.projectId, condition, subscribedOnly: true }))
      streamed.push(...batch.emails);
    expect(streamed).toEqual(['a@example.com']);
  });

  test('Stream resumes after an id and answers the full contacts with with_contacts', async () => {
    const url = `http://127.0.0.1:${platform.env.CONTACTS_PORT}`;
    const client = createRpcClient(ContactsService, url, { serviceToken: platform.env.SERVICE_TOKEN });
    const all: string[] = [];
    for await (const batch of client.stream({ projectId: t.projectId })) all.push(...batch.contactIds);
    expect(all).toHaveLength(3);
    expect([...all].sort()).toEqual(all);
    const rest: Array<{ id: string; email: string; subscribed: boolean; plan: unknown }> = [];
    for await (const batch of client.stream({ projectId: t.projectId, afterId: all[0], withContacts: true })) {
      expect(batch.contacts.map((c) => c.id)).toEqual(batch.contactIds);
      for (const c of batch.contacts)
        rest.push({ id: c.id, email: c.email, subscribed: c.subscribed, plan: c.data?.plan });
    }
    expect(rest.map((c) => c.id)).toEqual(all.slice(1));
    const expected: Record<string, object> = {
      'a@example.com': { subscribed: true, plan: 'pro' },
      'b@example.com': { subscribed: true, plan: 'free' },
      'c@example.com': { subscribed: false, plan: 'pro' },
    };
    for (const r of rest) expect(r).toMatchObject(expected[r.email]);
    const seen = [];
    for await (const batch of client.stream({ projectId: t.projectId, afterId: all[2] }))
      seen.push(...batch.contactIds);
    expect(seen).toEqual([]);
    await expect(
      (async () => {
        for await (const _ of client.stream({ projectId: t.projectId, afterId: 'nope' })) void _;
      })(),
    ).rejects.toMatchObject({ status: 422, errors: [expect.objectContaining({ field: 'afterId' })] });
  });

  test('invalid trees are 422 with field paths', async () => {
    const res = await filter(t, tree({ field: 'data.plan', operator: 'bogus', value: 1 }));
    expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.errors[0].field).toBe('condition.groups.0.filters.0.operator');
    expectEnvelope(await filter(t, tree({ field: 'plan', operator: 'equals', value: 1 })), 422, 'VALIDATION_ERROR');
    expectEnvelope(await filter(t, 'not a tree'), 422, 'VALIDATION_ERROR');
  });

  test("another project's, a deleted or an unknown segment is a 422 naming it, as in POST /segments", async () => {
    const other = await newTenant();
    const theirs = (await call('POST', '/segments', { name: 'Theirs', type: 'STATIC' }, { key: other.secretKey })).body;
    const seg = (body: object) => call('POST', '/segments', body, { key: t.secretKey });
    const gone = (await seg({ name: 'Gone', type: 'STATIC' })).body;
    expect((await call('DELETE', `/segments/${gone.id}`, undefined, { key: t.secretKey })).status).toBe(204);
    for (const id of [theirs.id, gone.id, '00000000-0000-7000-8000-000000000000']) {
      const byField = await filter(t, tree({ field: `segment.${id}`, operator: 'notMemberOfSegment' }));
      expectEnvelope(byField, 422, 'VALIDATION_ERROR');
      expect(byField.body.error.errors).toEqual([
        expect.objectContaining({ field: 'condition.groups.0.filters.0.field', code: 'not_found', received: id }),
      ]);
      const nested = {
        logic: 'OR',
        groups: [{ filters: [], conditions: tree({ field: 'email', operator: 'memberOfSegment', value: id }) }],
      };
      const byValue = await filter(t, nested);
      expectEnvelope(byValue, 422, 'VALIDATION_ERROR');
      expect(byValue.body.error.errors[0].field).toBe('condition.groups.0.conditions.groups.0.filters.0.value');
    }
    // The project's own segments, static and dynamic, preview as before.
    const mine = (await seg({ name: 'Mine', type: 'STATIC' })).body;
    const pro = (await seg({ name: 'Pro', condition: tree({ field: 'data.plan', operator: 'equals', value: 'pro' }) }))
      .body;
    expect((await filter(t, tree({ field: `segment.${mine.id}`, operator: 'memberOfSegment' }))).body.total).toBe(0);
    expect(emails(await filter(t, tree({ field: `segment.${pro.id}`, operator: 'memberOfSegment' })))).toEqual([
      'a@example.com',
      'c@example.com',
    ]);
  });
});
