import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { Bus } from '@svc/lib/bus';
import { on, subscribeTopics } from '@svc/lib/bus-topic';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import { MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import type { CampaignsStore } from './store/campaigns-store.js';
import { LIFECYCLE_COLUMNS, type LifecycleStep, type RecipientsStore } from './store/recipients-store.js';

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
  logger: Logger,
) {
  await subscribeTopics(
    bus,
    'campaigns-counters',
    [
      on(MESSAGING_TOPICS.emailLifecycle, async (m) => {
        if (m.test || !isUuid(m.campaignId) || !isUuid(m.contactId) || !isStep(m.type)) return;
        const at = m.occurredAt ? timestampDate(m.occurredAt) : new Date();
        await recipients.mark(m.campaignId, m.contactId, m.type, at);
      }),
    ],
    logger,
  );
  await subscribeTopics(
    bus,
    'campaigns-projects',
    [
      on(IDENTITY_TOPICS.projectDeleted, async ({ projectId }) =>
        isUuid(projectId) ? campaigns.removeProject(projectId) : undefined,
      ),
    ],
    logger,
  );
}
