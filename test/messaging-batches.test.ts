import { randomUUID } from 'node:crypto';
import type { DescService } from '@bufbuild/protobuf';
import { createClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { connect } from 'nats';
import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { fromConnectError } from '@svc/lib/rpc-errors';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { MessagingService, SendSource } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { contactsDirectory } from '../services/messaging/src/contacts-rpc.js';
import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { verifiedDomain, waitForMail } from './support/messaging.js';

// The batch paths: /v1/send upserts its recipients with one contacts call, QueueEmails queues a
// batch for known contacts, and a send's attachments are stored once for all of its emails.

let t: Tenant;
let from: string;

beforeAll(async () => {
  t = await newTenant();
  from = `hi@${(await verifiedDomain(t)).domain}`;
});

/** A Connect client of a service port (with SERVICE_TOKEN) that counts the calls per method. */
function serviceClient<S extends DescService>(service: S, port: string, calls: string[] = []) {
  const observe: Interceptor = (next) => (req) => {
    calls.push(req.method.name);
    req.header.set('authorization', `Bearer ${platform.env.SERVICE_TOKEN}`);
    return next(req);
  };
  return createClient(service, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}`, interceptors: [observe] }));
}

async function query<R extends pg.QueryResultRow>(service: string, sql: string, params: unknown[]): Promise<R[]> {
  const db = new pg.Client({ connectionString: serviceDatabaseUrl(service, platform.env.DATABASE_URL, platform.env) });
  await db.connect();
  try {
    return (await db.query<R>(sql, params)).rows;
  } finally {
    await db.end();
  }
}

const send = (body: unknown) => call('POST', '/v1/send', body, { key: t.secretKey });

describe('contacts.UpsertContacts', () => {
  test("messaging's contact directory upserts 50 recipients with one RPC, in order", async () => {
    const calls: string[] = [];
    const directory = contactsDirectory(serviceClient(ContactsService, platform.env.CONTACTS_PORT, calls));
    const emails = Array.from({ length: 50 }, () => uniqueEmail('batch'));
    const upserted = await directory.upsertMany(t.projectId, emails, {
      data: { plan: 'pro', code: { value: 1, persistent: false } },
    });
    expect(calls).toEqual(['UpsertContacts']);
    expect(upserted.map((u) => u.contact.email)).toEqual(emails);
    expect(upserted[0]).toMatchObject({ contact: { subscribed: false, data: { plan: 'pro' } }, oneOff: { code: 1 } });
  });

  test('each item answers a contact or its own error; a repeated address sees the earlier write', async () => {
    const contacts = serviceClient(ContactsService, platform.env.CONTACTS_PORT);
    const email = uniqueEmail('items');
    const { results } = await contacts.upsertContacts({
      projectId: t.projectId,
      items: [
        { email, data: { step: 1 } },
        { email: 'not-an-address' },
        { email: email.toUpperCase(), subscribed: true, data: { step: 2 } },
      ],
    });
    expect(results.map((r) => r.result.case)).toEqual(['upserted', 'error', 'upserted']);
    const [first, failed, second] = results.map((r) => r.result.value);
    expect(first).toMatchObject({ isNew: true, contact: { email, subscribed: false } });
    expect(failed).toMatchObject({ httpStatus: 422, errors: [{ field: 'email' }] });
    expect(second).toMatchObject({ isNew: false, contact: { email, subscribed: true, data: { step: 2 } } });
  });

  test('a 50-recipient /v1/send writes its contacts in one contacts transaction', async () => {
    const to = Array.from({ length: 50 }, () => uniqueEmail('fifty'));
    const res = await send({ to, from, subject: 'Hi {{email}}', body: '<p>Hi</p>' });
    expect(res.status).toBe(200);
    const ids = res.body.data.emails.map((e: { contact: { id: string } }) => e.contact.id);
    // created_at is now(), the start of the writing transaction: one value for all 50 rows means one
    // UpsertContacts transaction, where one upsert per recipient took 50 (each awaited in turn).
    const sql =
      'SELECT count(*) AS rows, count(DISTINCT created_at) AS starts FROM contacts WHERE id = ANY($1::uuid[])';
    expect(await query('contacts', sql, [ids])).toEqual([{ rows: 50, starts: 1 }]);
  });
});

describe('attachments and QueueEmails', () => {
  test('an attachment sent to 3 recipients is stored once and every delivered message carries it', async () => {
    const to = [uniqueEmail('att'), uniqueEmail('att'), uniqueEmail('att')];
    const content = Buffer.from('%PDF-1.4 the report').toString('base64');
    const res = await send({
      to,
      from,
      subject: 'report',
      body: '<p>attached</p>',
      attachments: [{ filename: 'report.pdf', content, contentType: 'application/pdf' }],
    });
    expect(res.status).toBe(200);
    for (const address of to) {
      const [mail] = await waitForMail(address);
      expect(mail.parsed.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([
        ['report.pdf', '%PDF-1.4 the report'],
      ]);
    }
    const emailIds = res.body.data.emails.map((e: { email: string }) => e.email);
    const stored = await query(
      'messaging',
      `SELECT count(DISTINCT e.send_id) AS sends, (SELECT count(*) FROM send_attachments a
         WHERE a.send_id IN (SELECT send_id FROM emails WHERE id = ANY($1::uuid[]))) AS attachments
       FROM emails e WHERE e.id = ANY($1::uuid[])`,
      [emailIds],
    );
    expect(stored).toEqual([{ sends: 1, attachments: 1 }]);
  });

  test('QueueEmails queues a campaign batch at campaign priority: campaign id, per-recipient variables', async () => {
    const messaging = serviceClient(MessagingService, platform.env.MESSAGING_PORT);
    const people = [uniqueEmail('q'), uniqueEmail('q')];
    const contacts = await contactsDirectory(serviceClient(ContactsService, platform.env.CONTACTS_PORT)).upsertMany(
      t.projectId,
      people,
      { subscribed: true },
    );
    const campaignId = '6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b';
    const out = await messaging.queueEmails({
      projectId: t.projectId,
      content: { subject: 'Hello {{first}}', body: '<p>Hi {{first}}</p>', from: { email: from }, type: 'MARKETING' },
      recipients: contacts.map(({ contact }, i) => ({
        contactId: contact.id,
        email: contact.email,
        subscribed: contact.subscribed,
        variables: { first: `P${i}` },
      })),
      source: SendSource.CAMPAIGN,
      campaignId,
    });
    expect(out.emails.map((e) => e.status)).toEqual(['queued', 'queued']);
    expect((await waitForMail(people[1]))[0].parsed.subject).toBe('Hello P1');
    const rows = await query<{ priority: number; campaign_id: string }>(
      'messaging',
      'SELECT priority, campaign_id FROM emails WHERE id = ANY($1::uuid[])',
      [out.emails.map((e) => e.emailId)],
    );
    expect(rows).toEqual([
      { priority: 2, campaign_id: campaignId },
      { priority: 2, campaign_id: campaignId },
    ]);
    // The content rules of /v1/send apply: no subject and body without a template is a 422 naming them.
    const refused = await messaging
      .queueEmails({ projectId: t.projectId, content: { from: { email: from } }, recipients: [] })
      .then(() => undefined, fromConnectError);
    expect(refused).toMatchObject({ status: 422, code: 'VALIDATION_ERROR' });
    expect(refused?.errors?.map((e) => e.field).sort()).toEqual(['content.body', 'content.subject', 'recipients']);
  });
});

describe('QueueEmails: dedupe keys, per-recipient failures, test messages', () => {
  const messaging = () => serviceClient(MessagingService, platform.env.MESSAGING_PORT);
  const people = async (n: number) =>
    (
      await contactsDirectory(serviceClient(ContactsService, platform.env.CONTACTS_PORT)).upsertMany(
        t.projectId,
        Array.from({ length: n }, () => uniqueEmail('dd')),
        { subscribed: true },
      )
    ).map(({ contact }) => contact);
  const recipient = (c: { id: string; email: string }, extra: object = {}) => ({
    contactId: c.id,
    email: c.email,
    subscribed: true,
    ...extra,
  });
  // A function: `from` is set in beforeAll.
  const content = () => ({ subject: 'Hi', body: '<p>Hi</p>', from: { email: from } });
  const rowsWithKey = (key: string) =>
    query<{ id: string }>('messaging', 'SELECT id FROM emails WHERE project_id = $1 AND dedupe_key = $2', [
      t.projectId,
      key,
    ]);

  test('a repeated dedupe_key answers "duplicate" with the first email id and queues nothing new', async () => {
    const [a, b] = await people(2);
    const key = `campaign:${randomUUID()}:${a.id}`;
    const first = await messaging().queueEmails({
      projectId: t.projectId,
      content: content(),
      recipients: [recipient(a, { dedupeKey: key }), recipient(a, { dedupeKey: key })],
      source: SendSource.CAMPAIGN,
    });
    // Within one batch the second occurrence is the duplicate.
    expect(first.emails.map((e) => e.status)).toEqual(['queued', 'duplicate']);
    expect(first.emails[1].emailId).toBe(first.emails[0].emailId);
    const again = await messaging().queueEmails({
      projectId: t.projectId,
      content: content(),
      recipients: [recipient(a, { dedupeKey: key }), recipient(b, { dedupeKey: `campaign:x:${b.id}` })],
      source: SendSource.CAMPAIGN,
    });
    expect(again.emails.map((e) => [e.status, e.emailId === first.emails[0].emailId])).toEqual([
      ['duplicate', true],
      ['queued', false],
    ]);
    expect(await rowsWithKey(key)).toEqual([{ id: first.emails[0].emailId }]);
    expect(await waitForMail(a.email)).toHaveLength(1);

    // Concurrent calls with one key: one email, both answer its id (the unique index is the final guard).
    const raced = `workflow:${randomUUID()}:step-1`;
    const calls = await Promise.all(
      Array.from({ length: 4 }, () =>
        messaging().queueEmails({
          projectId: t.projectId,
          content: content(),
          recipients: [recipient(b, { dedupeKey: raced })],
          source: SendSource.WORKFLOW,
        }),
      ),
    );
    const answers = calls.map((c) => c.emails[0]);
    expect(answers.filter((e) => e.status === 'queued')).toHaveLength(1);
    expect(new Set(answers.map((e) => e.emailId)).size).toBe(1);
    expect(await rowsWithKey(raced)).toHaveLength(1);
  });

  test('a recipient whose body fails to render is "failed" with an error; the others are queued', async () => {
    const [ok, bad, ok2] = await people(3);
    const out = await messaging().queueEmails({
      projectId: t.projectId,
      // The range is allocated at render time: liquidjs' memory limit stops the huge one.
      content: { ...content(), body: '<p>{% for i in (1..n) %}x{% endfor %}</p>' },
      recipients: [
        recipient(ok, { variables: { n: 3 } }),
        recipient(bad, { variables: { n: 1_000_000_000 } }),
        recipient(ok2, { variables: { n: 2 } }),
      ],
      source: SendSource.CAMPAIGN,
    });
    expect(out.emails.map((e) => e.status)).toEqual(['queued', 'failed', 'queued']);
    expect(out.emails[1]).toMatchObject({ emailId: '', error: expect.stringMatching(/^body: /) });
    const rows = await query<{ contact_id: string }>('messaging', 'SELECT contact_id FROM emails WHERE send_id = $1', [
      out.sendId,
    ]);
    expect(rows.map((r) => r.contact_id).sort()).toEqual([ok.id, ok2.id].sort());
    expect((await waitForMail(ok2.email))[0].parsed.html).toContain('xx');
  });

  test('test messages and campaign ids are on the row and on every lifecycle message (sent in batches)', async () => {
    const [c] = await people(1);
    const campaignId = randomUUID();
    const nc = await connect({ servers: platform.env.NATS_URL });
    // Sent mail goes out as `deliveries.emails_sent`, a delivery batch's emails of a project in one message.
    const sub = nc.subscribe(`${platform.runId}.deliveries.emails_sent`);
    const seen: Array<Record<string, unknown>> = [];
    void (async () => {
      for await (const m of sub) seen.push(...JSON.parse(new TextDecoder().decode(m.data)).emails);
    })();
    try {
      const out = await messaging().queueEmails({
        projectId: t.projectId,
        content: content(),
        recipients: [recipient(c)],
        source: SendSource.CAMPAIGN,
        campaignId,
        test: true,
      });
      const emailId = out.emails[0].emailId;
      expect(await query('messaging', 'SELECT test, campaign_id FROM emails WHERE id = $1', [emailId])).toEqual([
        { test: true, campaign_id: campaignId },
      ]);
      const sent = await eventually(async () => seen.find((m) => m.emailId === emailId));
      expect(sent).toMatchObject({ type: 'sent', campaignId, test: true });
    } finally {
      await nc.drain();
    }
  });
});
