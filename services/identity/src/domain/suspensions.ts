import { randomUUID } from 'node:crypto';
import { withTransaction } from '@svc/lib/db';
import { conflict, forbidden, validationError } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { enqueueMessage } from '@svc/lib/outbox';
import type { NewSuspension, SuspensionRow, SuspensionsStore } from '../store/suspensions-store.js';
import { projectReinstated, projectSuspended } from './bus-messages.js';
import type { Identity } from './identity.js';
import { canDeleteProject } from './roles.js';

export interface SuspensionState {
  active: SuspensionRow | null;
  history: SuspensionRow[];
  /** Internal callers only: no project has the id (deleted; a member's question about it is a 404). */
  deleted: boolean;
}

/**
 * Sending suspensions of a project (identity owns projects; messaging judges the rates and asks).
 * Suspending and reinstating are messages on the bus (identity.project.suspended / .reinstated), written
 * with the row, so every service's cached view of the project follows.
 */
export class Suspensions {
  constructor(
    private readonly identity: Identity,
    private readonly store: SuspensionsStore,
  ) {}

  /** Idempotent: an already suspended project keeps its open suspension (`created` false). */
  async suspend(input: Omit<NewSuspension, 'id'>): Promise<{ suspension: SuspensionRow | null; created: boolean }> {
    if (!isUuid(input.projectId))
      throw validationError([{ field: 'projectId', message: 'Not a uuid', code: 'invalid' }]);
    return withTransaction(this.store.pool, async (tx) => {
      const row = await this.store.insert(tx, { ...input, id: randomUUID() });
      if (!row) return { suspension: await this.store.open(tx, input.projectId), created: false };
      const { id: suspensionId, project_id: projectId, metric, rate, reason } = row;
      await enqueueMessage(tx, projectSuspended({ projectId, suspensionId, metric, rate, reason }));
      return { suspension: row, created: true };
    });
  }

  /** The owner lifts the open suspension; sending judges only mail sent after it from then on. */
  async reinstate(userId: string, projectId: string): Promise<SuspensionRow> {
    const project = await this.identity.project(userId, projectId);
    if (!canDeleteProject(project.role!)) {
      throw forbidden('Only the owner can reinstate a suspended project', 'PROJECT_ACCESS_DENIED');
    }
    return withTransaction(this.store.pool, async (tx) => {
      const row = await this.store.lift(tx, projectId, userId);
      if (!row) throw conflict('The project is not suspended', { projectId });
      await enqueueMessage(tx, projectReinstated({ projectId, suspensionId: row.id, liftedBy: userId }));
      return row;
    });
  }

  /**
   * With a user, members only (another user's project is a 404); without, an internal caller, who also learns
   * whether the project is gone (messaging's tracked links of a deleted project stop redirecting).
   */
  async state(userId: string, projectId: string): Promise<SuspensionState> {
    if (userId) await this.identity.project(userId, projectId);
    if (!isUuid(projectId)) return { active: null, history: [], deleted: false };
    const [history, exists] = await Promise.all([
      this.store.history(projectId),
      userId ? true : this.store.projectExists(projectId),
    ]);
    return { active: history.find((s) => !s.lifted_at) ?? null, history, deleted: !exists };
  }
}
