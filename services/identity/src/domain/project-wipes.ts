import { randomUUID } from 'node:crypto';
import { withTransaction } from '@svc/lib/db';
import { conflict, forbidden, notFound } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { enqueueMessage } from '@svc/lib/outbox';
import type { IdentityStore } from '../store/identity-store.js';
import type { WipeKind, WipeRow, WipeStepRow, WipesStore } from '../store/wipes-store.js';
import { projectDeleted, projectWipeRequested } from './bus-messages.js';
import type { Identity } from './identity.js';
import { canDeleteProject } from './roles.js';

/**
 * The saga's phases, in order. Campaigns and workflows go first: they stop handing mail to messaging
 * (running campaigns, executions, timers), so nothing of the project is queued after messaging wiped it.
 */
export const WIPE_PHASES = [
  ['campaigns', 'workflows'],
  ['contacts', 'segments', 'messaging'],
] as const;

export type StepStatus = 'waiting' | 'running' | 'done';

export interface WipeView extends WipeRow {
  status: 'running' | 'completed';
  steps: (WipeStepRow & { status: StepStatus })[];
}

const stepStatus = (s: WipeStepRow): StepStatus => (s.done_at ? 'done' : s.started_at ? 'running' : 'waiting');

/**
 * Project reset (its data wiped in every service, the project and keys kept) and deletion (the project
 * row and keys go at once, then its data): identity records the request with a step per service and asks
 * the first phase on the bus; each service reports its step done (CompleteProjectWipeStep), which starts
 * the next phase. A deletion leaves no row behind once its last step is done.
 */
export class ProjectWipes {
  constructor(
    private readonly identity: Identity,
    private readonly store: IdentityStore,
    private readonly wipes: WipesStore,
  ) {}

  reset(userId: string, projectId: string): Promise<WipeView> {
    return this.begin(userId, projectId, 'reset');
  }

  delete(userId: string, projectId: string): Promise<WipeView> {
    return this.begin(userId, projectId, 'delete');
  }

  /** The project's latest wipe for a member; a deleted project's running deletion for the owner who asked. */
  async latest(userId: string, projectId: string): Promise<WipeView> {
    const none = notFound('ProjectReset', projectId);
    if (!isUuid(projectId)) throw none;
    const member = await this.identity.project(userId, projectId).catch(() => null);
    const wipe = await this.wipes.latest(projectId, member ? undefined : userId);
    if (!wipe) throw none;
    return this.view(wipe);
  }

  stepPending(wipeId: string, service: string): Promise<boolean> {
    return isUuid(wipeId) ? this.wipes.stepPending(wipeId, service) : Promise.resolve(false);
  }

  /** Idempotent: a step reported twice, or of a finished wipe, changes nothing. */
  async completeStep(wipeId: string, service: string): Promise<void> {
    if (!isUuid(wipeId)) return;
    await withTransaction(this.wipes.pool, async (tx) => {
      const wipe = await this.wipes.lock(tx, wipeId);
      if (!wipe || wipe.completed_at || !(await this.wipes.markDone(tx, wipeId, service))) return;
      const open = (await this.wipes.steps(tx, wipeId)).filter((s) => !s.done_at);
      if (!open.length) {
        if (wipe.kind === 'delete') await this.wipes.forgetProject(tx, wipe.project_id);
        else await this.wipes.complete(tx, wipeId);
        return;
      }
      if (open.some((s) => s.started_at)) return;
      const phase = Math.min(...open.map((s) => s.phase));
      const services = open.filter((s) => s.phase === phase).map((s) => s.service);
      await this.wipes.start(tx, wipeId, services);
      await enqueueMessage(tx, projectWipeRequested({ wipeId, projectId: wipe.project_id, kind: wipe.kind, services }));
    });
  }

  private async begin(userId: string, projectId: string, kind: WipeKind): Promise<WipeView> {
    const project = await this.identity.project(userId, projectId);
    if (!canDeleteProject(project.role!)) {
      throw forbidden(`Only the owner can ${kind} a project`, 'PROJECT_ACCESS_DENIED');
    }
    const wipe = await withTransaction(this.wipes.pool, async (tx) => {
      const row = await this.wipes.insert(tx, { id: randomUUID(), projectId, kind, requestedBy: userId }, WIPE_PHASES);
      if (!row) throw conflict('A reset or deletion of this project is already running', { projectId });
      if (kind === 'delete') {
        // The project, its keys and members go now: its keys are refused from this commit on.
        await this.store.deleteProject(tx, projectId);
        await enqueueMessage(tx, projectDeleted(projectId));
      }
      const services = [...WIPE_PHASES[0]];
      await enqueueMessage(tx, projectWipeRequested({ wipeId: row.id, projectId, kind, services }));
      return row;
    });
    return this.view(wipe);
  }

  private async view(wipe: WipeRow): Promise<WipeView> {
    const steps = await this.wipes.steps(this.wipes.pool, wipe.id);
    return {
      ...wipe,
      status: wipe.completed_at ? 'completed' : 'running',
      steps: steps.map((s) => ({ ...s, status: stepStatus(s) })),
    };
  }
}
