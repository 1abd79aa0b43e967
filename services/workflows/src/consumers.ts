import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { Bus } from '@svc/lib/bus';
import { on, subscribeTopics } from '@svc/lib/bus-topic';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import type { Executions } from './domain/executions.js';
import type { WorkflowsStore } from './store/workflows-store.js';

/**
 * events.tracked (client events and the contact.* / email.* events contacts records) starts
 * workflows and resumes WAIT_FOR_EVENT steps. Durable and idempotent: an execution is keyed by
 * (workflow, event id), so a redelivered message starts nothing new.
 */
export async function subscribeWorkflowsConsumers(
  bus: Bus,
  executions: Executions,
  store: WorkflowsStore,
  logger: Logger,
) {
  await subscribeTopics(
    bus,
    'workflows-triggers',
    [
      on(CONTACTS_TOPICS.eventTracked, async (m, meta) => {
        if (!isUuid(m.projectId) || !isUuid(m.contactId) || !m.name) return;
        await executions.eventTracked({
          projectId: m.projectId,
          contactId: m.contactId,
          eventId: m.eventId || meta.id,
          name: m.name,
          data: (m.data ?? {}) as Record<string, unknown>,
          at: m.createdAt ? timestampDate(m.createdAt) : new Date(),
        });
      }),
    ],
    logger,
  );
  await subscribeTopics(
    bus,
    'workflows-projects',
    [
      on(IDENTITY_TOPICS.projectDeleted, async ({ projectId }) =>
        isUuid(projectId) ? store.removeProject(projectId) : undefined,
      ),
    ],
    logger,
  );
}
