import { randomUUID } from 'node:crypto';
import { connect, headers, StringCodec, type NatsConnection } from 'nats';
import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';
import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { verifiedDomain } from './support/messaging.js';

// A deleted project's messages handled after its wipe (mail that was in flight, a redelivery, a message published
// late) write nothing again in any service (lib/project-tombstones.ts); a reset project keeps taking new data.
// The proof is each service's own database, read table by table for rows carrying the project's id.

const DATA_SERVICES = ['contacts', 'messaging', 'segments', 'campaigns', 'workflows'] as const;
const STREAMS = ['CONTACTS', 'EVENTS', 'EMAILS', 'DELIVERIES', 'SEGMENTS'];
const sc = StringCodec();

const dbs = new Map<string, pg.Client>();
let nc: NatsConnection;

beforeAll(async () => {
  for (const s of DATA_SERVICES) {
    const db = new pg.Client({ connectionString: serviceDatabaseUrl(s, platform.env.DATABASE_URL, platform.env) });
    await db.connect();
    dbs.set(s, db);
  }
  nc = await connect({ servers: platform.env.NATS_URL });
});

afterAll(async () => {
  await nc?.drain();
  for (const db of dbs.values()) await db.end();
});

/** Tables of each service holding rows of the project (only those with any: `{}` when nothing is left). */
async function rowsLeft(projectId: string): Promise<Record<string, number>> {
  const left: Record<string, number> = {};
  for (const [service, db] of dbs) {
    const { rows: tables } = await db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.columns
       WHERE table_schema = 'public' AND column_name = 'project_id' ORDER BY table_name`,
    );
    for (const { table_name } of tables) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${table_name}" WHERE project_id = $1`,
        [projectId],
      );
      if (rows[0].n) left[`${service}.${table_name}`] = rows[0].n;
    }
  }
  return left;
}

/** Publishes on the platform's JetStream as a service's outbox relay would (a message id of its own). */
async function publish(subject: string, data: unknown): Promise<void> {
  const h = headers();
  h.set('Nats-Msg-Id', `late-${randomUUID()}`);
  await nc.jetstream().publish(`${platform.runId}.${subject}`, sc.encode(JSON.stringify(data)), { headers: h });
}

/** Every durable consumer of the streams has acknowledged all it was handed: what was published is handled. */
async function busDrained(): Promise<void> {
  const jsm = await nc.jetstreamManager();
  await eventually(
    async () => {
      for (const stream of STREAMS) {
        for await (const c of jsm.consumers.list(`${platform.runId}_${stream}`)) {
          if (c.num_pending > 0 || c.num_ack_pending > 0) return undefined;
        }
      }
      return true;
    },
    60_000,
    'every consumer caught up',
  );
}

/** Late messages of every kind a consumer writes a project's rows from, for this contact and email. */
async function lateMessages(projectId: string, contactId: string, emailId: string): Promise<void> {
  const at = new Date().toISOString();
  const step = (type: string) => ({ projectId, contactId, emailId, type, occurredAt: at, data: { email: 'x@y.test' } });
  await publish('emails.open', step('open'));
  await publish('emails.click', { ...step('click'), data: { url: 'https://example.com/' } });
  await publish('deliveries.emails_sent', { projectId, emails: [step('sent')] });
  const event = { projectId, contactId, eventId: randomUUID(), name: 'late_event', data: { a: 1 }, createdAt: at };
  await publish('events.tracked', event);
  await publish('events.tracked_batch', { projectId, events: [{ ...event, eventId: randomUUID() }] });
  await publish('segments.membership.changed', {
    projectId,
    contactId,
    segmentId: randomUUID(),
    slug: 'late',
    change: 'entry',
    occurredAt: at,
  });
}

/** A tenant with mail going out and events tracked: the ids of one contact and one of its emails. */
async function trafficOf(x: Tenant): Promise<{ contactId: string; emailId: string }> {
  const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: x.secretKey });
  const { domain } = await verifiedDomain(x);
  const to = Array.from({ length: 12 }, () => uniqueEmail('late'));
  const sent = await Promise.all(
    to.map((address) => api('POST', '/v1/send', { to: address, subject: 's', body: '<p>b</p>', from: `a@${domain}` })),
  );
  for (const r of sent) expect(r.status).toBe(200);
  await Promise.all(to.map((email) => api('POST', '/v1/track', { email, event: 'signed_in', data: { n: 1 } })));
  const contactId = (await api('POST', '/contacts/lookup', { emails: [to[0]] })).body.found[0].id as string;
  const emailId = await eventually(async () => (await api('GET', `/emails?contactId=${contactId}`)).body.data[0]?.id);
  return { contactId, emailId };
}

async function wipe(x: Tenant, kind: 'reset' | 'delete'): Promise<void> {
  const owner = { cookie: x.cookie };
  const url = `/users/@me/projects/${x.projectId}`;
  const asked =
    kind === 'delete'
      ? await call('DELETE', url, undefined, owner)
      : await call('POST', `${url}/reset`, undefined, owner);
  expect(asked.status).toBe(202);
  await eventually(
    async () => {
      const w = await call('GET', `${url}/reset`, undefined, owner);
      if (kind === 'delete') return w.status === 404 ? true : undefined;
      return w.body.status === 'completed' ? true : undefined;
    },
    60_000,
    `${kind} done`,
  );
}

test('a project deleted with mail in flight: its late messages write no row in any service', async () => {
  const x = await newTenant();
  const { contactId, emailId } = await trafficOf(x);
  await wipe(x, 'delete');
  // Mail the delivery worker had claimed still goes out, and its lifecycle messages come after the wipe; these
  // come later still, on every topic a consumer writes a project's rows from.
  await lateMessages(x.projectId, contactId, emailId);
  await busDrained();
  expect(await rowsLeft(x.projectId)).toEqual({});
});

test('a reset project: messages written before the reset write nothing, later ones are its data', async () => {
  const x = await newTenant();
  const { contactId, emailId } = await trafficOf(x);
  const before = new Date().toISOString();
  await wipe(x, 'reset');
  await busDrained();
  // A consumer's backlog from before the reset (their times say so), then what the project does afterwards.
  const step = (type: string, at: string) => ({ projectId: x.projectId, contactId, emailId, type, occurredAt: at });
  const event = (name: string, createdAt: string) => ({
    projectId: x.projectId,
    contactId,
    eventId: randomUUID(),
    name,
    data: {},
    createdAt,
  });
  await publish('emails.click', { ...step('click', before), data: { url: 'https://example.com/' } });
  await publish('events.tracked', event('before_reset', before));
  await publish('events.tracked_batch', { projectId: x.projectId, events: [event('before_reset_batch', before)] });
  const after = new Date().toISOString();
  await publish('emails.open', step('open', after));
  await publish('events.tracked', event('after_reset', after));
  await busDrained();
  const feed = await call('GET', '/activity?limit=100', undefined, { key: x.secretKey });
  expect(feed.status).toBe(200);
  // Mail the delivery worker sent after the reset may show too (its own rows, written after the reset).
  const seen = new Set(feed.body.data.map((a: { type: string; name: string | null }) => a.name ?? a.type));
  expect(
    ['after_reset', 'email.open', 'before_reset', 'before_reset_batch', 'email.click'].map((n) => seen.has(n)),
  ).toEqual([true, true, false, false, false]);
});
