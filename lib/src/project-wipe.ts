import type { Client } from '@connectrpc/connect';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import type { Bus } from './bus.js';
import { on, subscribeTopics } from './bus-topic.js';
import { isUuid } from './ids.js';
import type { Logger } from './logger.js';
import type { WipedProjects } from './project-tombstones.js';

/** What a service needs of identity to take part in project resets and deletions. */
export type WipeReports = Pick<Client<typeof IdentityService>, 'getProjectWipeStep' | 'completeProjectWipeStep'>;

export interface WipeParticipant {
  /** The service's name, as identity lists it in the saga's phases. */
  service: string;
  identity: WipeReports;
  /** Deletes every row of the project the service holds; safe to run twice. */
  wipe(projectId: string): Promise<void>;
  logger: Logger;
  /** The service's wiped projects: the reset or deletion is recorded there before `wipe` runs. */
  wiped: WipedProjects;
}

/**
 * A service's step of a project reset or deletion (identity.project.wipe_requested, one durable consumer
 * per service). The step runs only while identity says it is pending, so a redelivery after the step was
 * reported never wipes what a reset project wrote since; a failed wipe or report is redelivered. The project is
 * recorded in `wiped_projects` first, so messages of it handled afterwards write nothing again (for a reset: those
 * written before the wipe).
 */
export async function joinProjectWipes(bus: Bus, p: WipeParticipant): Promise<void> {
  await subscribeTopics(
    bus,
    `${p.service}-project-wipes`,
    [
      on(IDENTITY_TOPICS.projectWipeRequested, async (m) => {
        if (!m.services.includes(p.service) || !isUuid(m.projectId) || !isUuid(m.wipeId)) return;
        const step = { wipeId: m.wipeId, service: p.service };
        if (!(await p.identity.getProjectWipeStep(step)).pending) return;
        await p.wiped.record(m.projectId, m.kind);
        await p.wipe(m.projectId);
        await p.identity.completeProjectWipeStep(step);
        p.logger.info({ event: 'project.wiped', projectId: m.projectId, kind: m.kind }, 'project data wiped');
      }),
    ],
    p.logger,
  );
}
