import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { Bus } from '@svc/lib/bus';
import { on, rawField, subscribeTopics } from '@svc/lib/bus-topic';
import { GroupCommit } from '@svc/lib/group-commit';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import type { WipedProjects } from '@svc/lib/project-tombstones';
import { joinProjectWipes, type WipeReports } from '@svc/lib/project-wipe';
import { emailLifecycleTopic, MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import type { CampaignsStore } from './store/campaigns-store.js';
import {
  LIFECYCLE_COLUMNS,
  type LifecycleStep,
  type RecipientMark,
  type RecipientsStore,
} from './store/recipients-store.js';

/** Lifecycle messages handled at once (and written in one transaction at most). */
const CONCURRENCY = 256;
/** `deliveries.campaign_sent` messages handled at once: each holds a delivery batch's recipients of one campaign. */
const SENT_CONCURRENCY = 4;

/**
 * The lifecycle steps read one by one from `emails.<type>`. Sent mail comes many recipients per message on
 * `deliveries.campaign_sent` instead of `emails.sent`: a campaign sends thousands of messages a second.
 */
const STEPS = ['delivery', 'open', 'click', 'bounce', 'complaint', 'suppressed'] as const;

const isStep = (type: string): type is LifecycleStep => Object.hasOwn(LIFECYCLE_COLUMNS, type);

/**
 * Campaign counters from messaging's lifecycle messages: each sets a flag on the recipient row once, and only the
 * first setting counts (recipients-store.ts), so redelivery, repeated opens and any order of messages leave the
 * counters exact. Test messages count nowhere.
 */
export async function subscribeCampaignsConsumers(
  bus: Bus,
  recipients: RecipientsStore,
  campaigns: CampaignsStore,
  identity: WipeReports,
  wiped: WipedProjects,
  logger: Logger,
) {
  const marks = new GroupCommit<RecipientMark, void>(
    () => recipients.pool.connect(),
    async (tx, mark) => void (await recipients.markMany(tx, [mark])),
    {
      maxBatch: CONCURRENCY,
      writeMany: async (tx, batch) => {
        await recipients.markMany(tx, batch);
        return batch.map(() => undefined);
      },
    },
  );
  await subscribeTopics(
    bus,
    'campaigns-counters',
    wiped.routes(
      STEPS.map((type) =>
        on(
          emailLifecycleTopic(type),
          async (m) => {
            if (m.test || !isUuid(m.campaignId) || !isUuid(m.contactId)) return;
            if (m.type === 'suppressed') return void (await recipients.markWithdrawn(m.campaignId, m.contactId));
            if (!isStep(m.type)) return;
            const at = m.occurredAt ? timestampDate(m.occurredAt) : new Date();
            await marks.submit({ campaignId: m.campaignId, contactId: m.contactId, step: m.type, at });
          },
          // Mail of no campaign (transactional, workflows: most lifecycle messages) is acknowledged undecoded.
          { skip: (d) => !isUuid(rawField(d, 'campaignId')) },
        ),
      ),
    ),
    logger,
    // Opens and clicks come thousands a second too: they are handled many at once and their flags written together
    // (one statement per step and batch); each message is acknowledged after its commit. This group read `emails.>`
    // until sent mail moved to `deliveries.campaign_sent`: that durable is replaced on the broker.
    { concurrency: CONCURRENCY, replaces: [MESSAGING_TOPICS.emailLifecycle.subject] },
  );
  await subscribeTopics(
    bus,
    'campaigns-sent',
    wiped.routes([
      on(MESSAGING_TOPICS.campaignEmailsSent, async (m) => {
        if (!isUuid(m.campaignId)) return;
        const at = m.occurredAt ? timestampDate(m.occurredAt) : new Date();
        const { campaignId } = m;
        const sent = m.contactIds
          .filter(isUuid)
          .map((contactId) => ({ campaignId, contactId, step: 'sent' as const, at }));
        // One statement (its own transaction) per message: the flags of its recipients and the counter they add to.
        if (sent.length) await recipients.markMany(recipients.pool, sent);
      }),
    ]),
    logger,
    { concurrency: SENT_CONCURRENCY },
  );
  await joinProjectWipes(bus, {
    service: 'campaigns',
    identity,
    wiped,
    logger,
    wipe: (p) => campaigns.removeProject(p),
  });
}
