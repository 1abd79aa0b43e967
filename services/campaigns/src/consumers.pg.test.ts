import { randomUUID } from 'node:crypto';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { MemoryBus } from '@svc/lib/bus-memory';
import { busMessage } from '@svc/lib/bus-topic';
import { WipedProjects } from '@svc/lib/project-tombstones';
import type { WipeReports } from '@svc/lib/project-wipe';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { capturingLogger } from '@svc/lib/test-logger';
import { emailLifecycleSubject, MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import { subscribeCampaignsConsumers } from './consumers.js';
import { CampaignsStore } from './store/campaigns-store.js';
import { migrations } from './store/migrations.js';
import { RecipientsStore } from './store/recipients-store.js';
import { insertSendingCampaign } from './store/test-campaigns.js';

// The counters' consumer on a real PostgreSQL with the in-process bus: sent mail comes as one
// deliveries.campaign_sent per campaign and delivery batch, the other steps as emails.<type>.

const { logger } = capturingLogger();
const PROJECT = randomUUID();
const at = new Date('2026-01-02T03:04:05Z');
const identity = {} as WipeReports; // no project wipe in these tests

let db: TestDatabase;
let campaigns: CampaignsStore;
let bus: MemoryBus;

beforeAll(async () => {
  db = await createTestDatabase('campaigns_consumers', migrations);
  campaigns = new CampaignsStore(db.pool);
  bus = new MemoryBus(logger);
  const wiped = new WipedProjects(db.pool);
  await wiped.start(bus);
  await subscribeCampaignsConsumers(bus, new RecipientsStore(db.pool), campaigns, identity, wiped, logger);
});

afterAll(async () => {
  await bus?.close();
  await db?.drop();
});

/** A sending campaign with these recipients in its snapshot. */
async function campaignOf(contacts: string[]): Promise<string> {
  const id = await insertSendingCampaign(campaigns, PROJECT);
  await db.pool.query(
    `INSERT INTO campaign_recipients (campaign_id, contact_id, email, subscribed, variables)
     SELECT $1, c, c::text || '@x.test', true, '{}' FROM unnest($2::uuid[]) AS c`,
    [id, contacts],
  );
  return id;
}

let published = 0;
const publish = (m: { subject: string; payload: unknown }) => bus.publish(m.subject, m.payload, `m-${++published}`);

const sent = (campaignId: string, contactIds: string[]) =>
  publish(
    busMessage(MESSAGING_TOPICS.campaignEmailsSent, {
      projectId: PROJECT,
      campaignId,
      contactIds,
      occurredAt: timestampFromDate(at),
    }),
  );

const lifecycle = (campaignId: string, contactId: string, type: string) =>
  publish(
    busMessage(
      MESSAGING_TOPICS.emailLifecycle,
      { projectId: PROJECT, contactId, emailId: randomUUID(), type, occurredAt: timestampFromDate(at), campaignId },
      emailLifecycleSubject(type),
    ),
  );

const counters = async (id: string) => {
  const c = (await campaigns.byId(id))!;
  return { sent: c.sent_count, opened: c.opened_count, bounced: c.bounced_count };
};

test('deliveries.campaign_sent sets each recipient sent once: a repeated batch counts nobody twice', async () => {
  const people = [randomUUID(), randomUUID(), randomUUID()];
  const id = await campaignOf(people);
  await sent(id, people.slice(0, 2));
  await sent(id, people.slice(0, 2)); // the same batch again (a relay that published twice)
  await sent(id, [people[1], people[2], 'not-a-uuid', randomUUID()]); // one already sent; one of no recipient
  expect(await counters(id)).toEqual({ sent: 3, opened: 0, bounced: 0 });
  const { rows } = await db.pool.query('SELECT sent_at FROM campaign_recipients WHERE campaign_id = $1', [id]);
  expect(rows.map((r) => r.sent_at)).toEqual([at, at, at]);
});

test('emails.sent no longer counts; the other steps still come one by one from emails.<type>', async () => {
  const [ann, bob] = [randomUUID(), randomUUID()];
  const id = await campaignOf([ann, bob]);
  await lifecycle(id, ann, 'sent');
  expect(await counters(id)).toEqual({ sent: 0, opened: 0, bounced: 0 });
  await sent(id, [ann, bob]);
  await lifecycle(id, ann, 'open');
  await lifecycle(id, ann, 'open');
  await lifecycle(id, bob, 'bounce');
  expect(await counters(id)).toEqual({ sent: 2, opened: 1, bounced: 1 });
});
