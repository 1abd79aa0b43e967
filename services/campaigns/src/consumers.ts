import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { Bus } from '@svc/lib/bus';
import { on, rawField, subscribeTopics } from '@svc/lib/bus-topic';
import { GroupCommit } from '@svc/lib/group-commit';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import { joinProjectWipes, type WipeReports } from '@svc/lib/project-wipe';
import { MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import type { CampaignsStore } from './store/campaigns-store.js';
import {
  LIFECYCLE_COLUMNS,
  type LifecycleStep,
  type RecipientMark,
  type RecipientsStore,
} from './store/recipients-store.js';

/** Lifecycle messages handled at once (and written in one transaction at most). */
const CONCURRENCY = 256;

const isStep = (type: string): type is LifecycleStep => Object.hasOwn(LIFECYCLE_COLUMNS, type);

/**
 * Campaign counters from messaging's `emails.<type>` lifecycle messages: each sets a flag on the
 * recipient row once, and only the first setting counts (recipients-store.ts), so redelivery,
 * repeated opens and any order of messages leave the counters exact. Test messages count nowhere.
 */
export async function subscribeCampaignsConsumers(
  bus: Bus,
  recipients: RecipientsStore,
  campaigns: CampaignsStore,
  identity: WipeReports,
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
    [
      on(
        MESSAGING_TOPICS.emailLifecycle,
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
    ],
    logger,
    // A campaign sends thousands of messages a second: they are handled many at once and their flags
    // written together (one statement per step and batch); each message is acknowledged after its commit.
    { concurrency: CONCURRENCY },
  );
  await joinProjectWipes(bus, { service: 'campaigns', identity, logger, wipe: (p) => campaigns.removeProject(p) });
}
