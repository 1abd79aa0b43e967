import { randomBytes } from 'node:crypto';
import { withTransaction, type PoolClient } from '@svc/lib/db';
import { conflict, isAppError, notFound, unverifiedDomain, validationError } from '@svc/lib/errors';
import { isUuid, uuidv7 } from '@svc/lib/ids';
import type { ExecutionsStore } from '../store/executions-store.js';
import type { StepRow, TransitionRow, WorkflowRow, WorkflowsStore } from '../store/workflows-store.js';
import { assertNoBusyCycle, assertRunnable } from './graph.js';
import type { ContactsFields, MailChecksPort, SegmentChecksPort } from './ports.js';
import {
  parseNewStep,
  parseNewTransition,
  parseNewWorkflow,
  parseStepConfig,
  parseStepPatch,
  parseWorkflowPatch,
  type CreatableStepType,
  type SendEmailConfig,
} from './workflow-input.js';

export interface WorkflowView extends WorkflowRow {
  steps: StepRow[];
  transitions: TransitionRow[];
}

const workflowNotFound = (id: string) => notFound('Workflow', id, 'WORKFLOW_NOT_FOUND');

/** The slug of a segment event (`segment.<slug>.entry` or `.exit`), null for any other event name. */
export const segmentOfEvent = (eventName: string): string | null =>
  /^segment\.(.+)\.(?:entry|exit)$/.exec(eventName)?.[1] ?? null;

/** Workflows, their steps and transitions: the rules of the API (SPEC.md "Workflows"). */
export class Workflows {
  constructor(
    private readonly store: WorkflowsStore,
    private readonly executions: ExecutionsStore,
    private readonly contacts: ContactsFields,
    private readonly mail?: MailChecksPort,
    private readonly segments?: SegmentChecksPort,
  ) {}

  private tx<T>(fn: (db: PoolClient) => Promise<T>) {
    return withTransaction(this.store.pool, fn);
  }

  private async find(db: PoolClient, projectId: string, id: string, lock = false): Promise<WorkflowRow> {
    const w = isUuid(id) ? await this.store.get(db, projectId, id, lock) : null;
    if (!w) throw workflowNotFound(id);
    return w;
  }

  private async view(db: PoolClient, w: WorkflowRow): Promise<WorkflowView> {
    const [steps, transitions] = await Promise.all([this.store.steps(db, w.id), this.store.transitions(db, w.id)]);
    return { ...w, steps, transitions };
  }

  /** The workflow, locked for a structural edit: refused (409) while executions are active. */
  private async editable(db: PoolClient, projectId: string, id: string): Promise<WorkflowRow> {
    const w = await this.find(db, projectId, id, true);
    if (await this.executions.hasActive(db, w.id)) {
      throw conflict('Workflow has active executions: cancel them or let them finish before changing its steps', {
        workflowId: w.id,
      });
    }
    return w;
  }

  /**
   * A SEND_EMAIL step is checked as a campaign is when saved: its template is one of the project's, its subject
   * and body parse (422 naming them), and its sender's domain is verified (403).
   */
  private async checkMail(projectId: string, type: string, config: Record<string, unknown>): Promise<void> {
    if (type !== 'SEND_EMAIL' || !this.mail) return;
    const c = config as SendEmailConfig;
    if (c.templateId && !(await this.mail.templateExists(projectId, c.templateId))) {
      throw validationError([
        { field: 'config.templateId', message: 'No such template in this project', code: 'invalid_value' },
      ]);
    }
    if (c.subject !== undefined || c.body !== undefined) {
      try {
        // A part the template gives is not checked here (the template was checked when it was saved).
        await this.mail.checkContent(projectId, c.subject ?? '-', c.body ?? '-');
      } catch (err) {
        if (!isAppError(err) || err.status !== 422 || !err.errors) throw err;
        throw validationError(
          err.errors.map((e) => ({ ...e, field: `config.${e.field}` })),
          err.message,
        );
      }
    }
    const from = typeof c.from === 'string' ? c.from : c.from?.email;
    if (from && !(await this.mail.senderVerified(projectId, from))) throw unverifiedDomain(from);
  }

  /**
   * A SEND_EMAIL step's template, checked again in the transaction that stores the step, marked as a step write
   * naming it: a template DELETE under way refuses the step (409), one that starts later waits for the write
   * (FindWorkflowsUsing with `settled`) and sees the step (409 in turn). No step is left naming a deleted template.
   */
  private async holdTemplate(db: PoolClient, projectId: string, type: string, config: Record<string, unknown>) {
    const templateId = (config as SendEmailConfig).templateId;
    if (type !== 'SEND_EMAIL' || !templateId || !this.mail) return;
    await this.store.holdTemplate(db, templateId);
    if (!(await this.mail.templateExistsUnlessDeleting(projectId, templateId))) {
      throw validationError([
        { field: 'config.templateId', message: 'No such template in this project', code: 'invalid_value' },
      ]);
    }
  }

  /**
   * A segment's entry or exit event the workflow comes to listen for (its trigger, a wait), checked in the
   * transaction that stores it, marked as a workflow write naming the event: a segment DELETE under way refuses
   * the write (409), one that starts later waits for it (FindWorkflowsUsing with `settled`) and sees the workflow
   * (409 in turn); a segment that is gone, or never was, is a 422. No workflow is left on a deleted segment.
   */
  private async holdSegmentEvent(db: PoolClient, projectId: string, eventName: string | undefined, field: string) {
    const slug = eventName ? segmentOfEvent(eventName) : null;
    if (!eventName || !slug || !this.segments) return;
    await this.store.holdEvent(db, projectId, eventName);
    if (!(await this.segments.segmentExistsUnlessDeleting(projectId, slug))) {
      throw validationError([{ field, message: `No segment ${slug} in this project`, code: 'invalid_value' }]);
    }
  }

  /**
   * An enabled workflow's graph after an edit that adds transitions or changes what a wait waits for: events start
   * executions on it at once (no busy cycle, no mail loop; graph.ts).
   */
  private async assertNoBusyCycle(db: PoolClient, w: WorkflowRow): Promise<void> {
    if (!w.enabled) return;
    const v = await this.view(db, w);
    assertNoBusyCycle(graphSteps(v.steps), graphTransitions(v.transitions));
  }

  async list(projectId: string, page: number, pageSize: number) {
    return this.store.list(projectId, pageSize, (page - 1) * pageSize);
  }

  async get(projectId: string, id: string): Promise<WorkflowView> {
    return this.tx(async (db) => this.view(db, await this.find(db, projectId, id)));
  }

  async create(projectId: string, body: unknown): Promise<WorkflowView> {
    const b = parseNewWorkflow(body);
    return this.tx(async (db) => {
      const w = await this.store.insert(db, {
        id: uuidv7(),
        project_id: projectId,
        name: b.name,
        description: b.description ?? null,
        trigger_type: 'EVENT',
        trigger_config: { eventName: b.eventName },
        allow_reentry: b.allowReentry,
      });
      await this.holdSegmentEvent(db, projectId, b.eventName, 'eventName');
      const trigger = await this.store.insertStep(db, {
        id: uuidv7(),
        workflow_id: w.id,
        type: 'TRIGGER',
        name: 'Trigger',
        config: {},
      });
      return { ...w, steps: [trigger], transitions: [] };
    });
  }

  async update(projectId: string, id: string, body: unknown): Promise<WorkflowView> {
    const p = parseWorkflowPatch(body);
    return this.tx(async (db) => {
      const w = await this.find(db, projectId, id, true);
      const triggerType = p.triggerType ?? w.trigger_type;
      const eventName = p.eventName ?? p.triggerConfig?.eventName ?? w.trigger_config.eventName;
      if (triggerType === 'EVENT' && !eventName) {
        throw validationError([
          { field: 'triggerConfig.eventName', message: 'An EVENT trigger needs an event name', code: 'invalid_type' },
        ]);
      }
      const enabled = p.enabled ?? w.enabled;
      if (enabled && p.enabled) {
        const v = await this.view(db, w);
        assertRunnable(graphSteps(v.steps), graphTransitions(v.transitions));
      }
      const changedTrigger = p.triggerType !== undefined || p.eventName !== undefined || p.triggerConfig !== undefined;
      const row = await this.store.update(db, w.id, {
        name: p.name,
        description: p.description,
        triggerType: p.triggerType,
        triggerConfig: changedTrigger ? (eventName ? { eventName } : {}) : undefined,
        enabled: p.enabled,
        allowReentry: p.allowReentry,
      });
      // A trigger that comes to name a segment's event, or an enabled one naming it: the segment must be there.
      if (triggerType === 'EVENT' && (changedTrigger || p.enabled))
        await this.holdSegmentEvent(db, projectId, eventName, 'triggerConfig.eventName');
      return this.view(db, row);
    });
  }

  async remove(projectId: string, id: string): Promise<void> {
    await this.tx(async (db) => {
      const w = await this.editable(db, projectId, id);
      await this.store.remove(db, w.id);
    });
  }

  async addStep(projectId: string, workflowId: string, body: unknown): Promise<StepRow> {
    const s = parseNewStep(body);
    await this.checkMail(projectId, s.type, s.config);
    return this.tx(async (db) => {
      const w = await this.editable(db, projectId, workflowId);
      const step = await this.store.insertStep(db, {
        id: uuidv7(),
        workflow_id: w.id,
        type: s.type,
        name: s.name ?? s.type,
        config: s.config,
      });
      await this.store.touch(db, w.id);
      await this.holdTemplate(db, projectId, s.type, s.config);
      if (s.type === 'WAIT_FOR_EVENT')
        await this.holdSegmentEvent(db, projectId, waitedFor(s.config), 'config.eventName');
      return step;
    });
  }

  private async findStep(db: PoolClient, workflowId: string, stepId: string): Promise<StepRow> {
    const step = isUuid(stepId) ? (await this.store.steps(db, workflowId)).find((s) => s.id === stepId) : undefined;
    if (!step) throw notFound('Step', stepId);
    return step;
  }

  async updateStep(projectId: string, workflowId: string, stepId: string, body: unknown): Promise<StepRow> {
    const p = parseStepPatch(body);
    return this.tx(async (db) => {
      const w = await this.editable(db, projectId, workflowId);
      const step = await this.findStep(db, w.id, stepId);
      if (step.type === 'TRIGGER' && p.config !== undefined) {
        throw validationError([
          { field: 'config', message: 'The trigger is configured on the workflow', code: 'invalid_type' },
        ]);
      }
      const config = p.config === undefined ? undefined : parseStepConfig(step.type as CreatableStepType, p.config);
      if (config) await this.checkMail(projectId, step.type, config);
      const row = await this.store.updateStep(db, step.id, p.name, config);
      if (config) await this.holdTemplate(db, projectId, step.type, config);
      if (config && step.type === 'WAIT_FOR_EVENT')
        await this.holdSegmentEvent(db, projectId, waitedFor(config), 'config.eventName');
      // A wait that now listens for its own mail's email.sent can close a mail loop.
      if (config && step.type === 'WAIT_FOR_EVENT') await this.assertNoBusyCycle(db, w);
      await this.store.touch(db, w.id);
      return row;
    });
  }

  /** With `splice`, each step that led to the deleted one is connected to each step it led to (labels kept). */
  async deleteStep(projectId: string, workflowId: string, stepId: string, splice: boolean): Promise<void> {
    await this.tx(async (db) => {
      const w = await this.editable(db, projectId, workflowId);
      const step = await this.findStep(db, w.id, stepId);
      if (step.type === 'TRIGGER') throw conflict('The trigger step cannot be deleted');
      if (splice) {
        const ts = await this.store.transitions(db, w.id);
        const into = ts.filter((t) => t.to_step_id === step.id && t.from_step_id !== step.id);
        const outOf = ts.filter((t) => t.from_step_id === step.id && t.to_step_id !== step.id);
        for (const a of into) {
          for (const b of outOf) {
            await this.store.insertTransition(db, {
              id: uuidv7(),
              workflow_id: w.id,
              from_step_id: a.from_step_id,
              to_step_id: b.to_step_id,
              branch: a.branch,
              wait_outcome: a.wait_outcome,
            });
          }
        }
      }
      await this.store.removeStep(db, step.id);
      if (splice) await this.assertNoBusyCycle(db, w);
      await this.store.touch(db, w.id);
    });
  }

  async addTransition(projectId: string, workflowId: string, body: unknown): Promise<TransitionRow> {
    const t = parseNewTransition(body);
    return this.tx(async (db) => {
      const w = await this.editable(db, projectId, workflowId);
      const steps = await this.store.steps(db, w.id);
      const from = steps.find((s) => s.id === t.fromStepId);
      const to = steps.find((s) => s.id === t.toStepId);
      const bad = (field: string, message: string) => validationError([{ field, message, code: 'invalid_value' }]);
      if (!from) throw bad('fromStepId', 'No such step in this workflow');
      if (!to) throw bad('toStepId', 'No such step in this workflow');
      if (to.type === 'TRIGGER') throw bad('toStepId', 'Nothing leads into the trigger');
      if (from.type === 'EXIT') throw bad('fromStepId', 'An EXIT step ends the execution');
      if (from.type === 'CONDITION' && !t.branch) throw bad('branch', 'A CONDITION transition needs branch yes or no');
      if (from.type !== 'CONDITION' && t.branch) throw bad('branch', 'Only CONDITION transitions carry a branch');
      if (from.type === 'WAIT_FOR_EVENT' && !t.waitOutcome) {
        throw bad('waitOutcome', 'A WAIT_FOR_EVENT transition needs waitOutcome EVENT or TIMEOUT');
      }
      if (from.type !== 'WAIT_FOR_EVENT' && t.waitOutcome)
        throw bad('waitOutcome', 'Only WAIT_FOR_EVENT transitions carry one');
      const existing = (await this.store.transitions(db, w.id)).filter((x) => x.from_step_id === from.id);
      const taken = existing.some((x) => x.branch === t.branch && x.wait_outcome === t.waitOutcome);
      if (taken) throw conflict('That step already has this transition: delete it first', { fromStepId: from.id });
      const row = await this.store.insertTransition(db, {
        id: uuidv7(),
        workflow_id: w.id,
        from_step_id: from.id,
        to_step_id: to.id,
        branch: t.branch,
        wait_outcome: t.waitOutcome,
      });
      await this.assertNoBusyCycle(db, w);
      await this.store.touch(db, w.id);
      return row;
    });
  }

  async deleteTransition(projectId: string, workflowId: string, id: string): Promise<void> {
    await this.tx(async (db) => {
      const w = await this.editable(db, projectId, workflowId);
      if (!isUuid(id) || !(await this.store.removeTransition(db, w.id, id))) throw notFound('Transition', id);
      await this.store.touch(db, w.id);
    });
  }

  /** Contact fields (from the contacts service) and the data fields seen on trigger events. */
  async fields(projectId: string, workflowId?: string) {
    let names: string[];
    if (workflowId) {
      const w = await this.tx((db) => this.find(db, projectId, workflowId));
      names = w.trigger_config.eventName ? [w.trigger_config.eventName] : [];
    } else {
      names = await this.store.eventNames(projectId);
    }
    const [contact, event] = await Promise.all([
      this.contacts.fields(projectId),
      this.store.eventFields(projectId, names),
    ]);
    return [
      ...contact.map((f) => ({ ...f, source: 'contact' })),
      { field: 'event.name', type: 'string', source: 'event' },
      ...event.map((f) => ({ field: `event.data.${f.field}`, type: f.type, source: 'event' })),
    ];
  }

  webhookSecret(projectId: string): Promise<string> {
    return this.store.webhookSecret(projectId, `whsec_${randomBytes(24).toString('hex')}`);
  }
}

/** The event a WAIT_FOR_EVENT step's config waits for. */
const waitedFor = (config: Record<string, unknown>) => config.eventName as string | undefined;

export const graphSteps = (steps: StepRow[]) =>
  steps.map((s) => ({
    id: s.id,
    type: s.type,
    name: s.name,
    waitsFor: s.type === 'WAIT_FOR_EVENT' ? (s.config as { eventName?: string }).eventName : undefined,
  }));
export const graphTransitions = (ts: TransitionRow[]) =>
  ts.map((t) => ({
    id: t.id,
    fromStepId: t.from_step_id,
    toStepId: t.to_step_id,
    branch: t.branch,
    waitOutcome: t.wait_outcome,
  }));
