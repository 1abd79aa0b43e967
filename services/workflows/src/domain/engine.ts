import { randomBytes, randomUUID } from 'node:crypto';
import { isDependencyUnavailable } from '@svc/lib/dependency-errors';
import { isAppError } from '@svc/lib/errors';
import type { Logger } from '@svc/lib/logger';
import { Liquid } from 'liquidjs';
import type { ExecutionRow, ExecutionsStore, HistoryRow, StepOutcome } from '../store/executions-store.js';
import type { StepRow, TransitionRow, WorkflowRow, WorkflowsStore } from '../store/workflows-store.js';
import { evaluateCondition, type FilterTree } from './condition.js';
import type { ContactsPort, ContactView, MailPort } from './ports.js';
import { deliverWebhook, type WebhookOptions } from './webhook.js';
import {
  durationMs,
  type Duration,
  type SendEmailConfig,
  type UpdateContactConfig,
  type WaitConfig,
  type WebhookConfig,
} from './workflow-input.js';

/** How long a claimed execution stays with its worker before another may take it (a WEBHOOK step retries inside). */
export const LEASE_MS = 120_000;
/** Steps one claim runs before it lets other executions have the worker. */
const STEPS_PER_CLAIM = 50;
const TRANSIENT_RETRY_MS = 5_000;
/** Steps whose effects stay in this database (their visit number is not used as an idempotency key). */
const LOCAL_STEPS = new Set(['TRIGGER', 'CONDITION', 'DELAY', 'WAIT_FOR_EVENT', 'EXIT']);

interface Graph {
  workflow: WorkflowRow;
  steps: Map<string, StepRow>;
  transitions: TransitionRow[];
}

const liquid = new Liquid({ strictFilters: true, ownPropertyOnly: true });

/** Renders the Liquid in every string of a JSON value (WEBHOOK bodies). */
async function renderJson(value: unknown, vars: object): Promise<unknown> {
  if (typeof value === 'string') return value.includes('{') ? liquid.parseAndRender(value, vars) : value;
  if (Array.isArray(value)) return Promise.all(value.map((v) => renderJson(v, vars)));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = await renderJson(v, vars);
    return out;
  }
  return value;
}

class StepFailure extends Error {}

/**
 * Runs executions a worker claimed: the current step, then the next, until one waits or the
 * execution ends. Each step's outcome and the execution's next state are written in one
 * transaction under the claim's lease, so a worker that dies mid-step leaves the step to be run
 * again by the next claim; the effects that leave the service are keyed so a rerun is harmless
 * (SEND_EMAIL's dedupe key `workflow:<executionId>:<stepId>`, the webhook's X-Webhook-Id).
 */
export class Engine {
  constructor(
    private readonly workflows: WorkflowsStore,
    private readonly executions: ExecutionsStore,
    private readonly contacts: ContactsPort,
    private readonly mail: MailPort,
    private readonly webhook: WebhookOptions,
    private readonly logger: Logger,
    private readonly leaseMs = LEASE_MS,
  ) {}

  /** Runs a claimed batch; each workflow's graph is read once per batch (edits are refused while it runs). */
  async runClaimed(rows: ExecutionRow[]): Promise<void> {
    const graphs = new Map<string, Promise<Graph | null>>();
    const graph = (r: ExecutionRow) => {
      let g = graphs.get(r.workflow_id);
      if (!g) {
        g = this.graph(r.project_id, r.workflow_id);
        g.catch(() => graphs.delete(r.workflow_id));
        graphs.set(r.workflow_id, g);
      }
      return g;
    };
    await Promise.all(rows.map((r) => this.run(r, graph)));
  }

  private async graph(projectId: string, workflowId: string): Promise<Graph | null> {
    const workflow = await this.workflows.get(this.workflows.pool, projectId, workflowId);
    if (!workflow) return null;
    const [steps, transitions] = await Promise.all([
      this.workflows.steps(this.workflows.pool, workflowId),
      this.workflows.transitions(this.workflows.pool, workflowId),
    ]);
    return { workflow, steps: new Map(steps.map((s) => [s.id, s])), transitions };
  }

  async run(
    claimed: ExecutionRow,
    graphOf = (r: ExecutionRow) => this.graph(r.project_id, r.workflow_id),
  ): Promise<void> {
    let row: ExecutionRow | null = claimed;
    try {
      const graph = await graphOf(row);
      if (!graph) return;
      for (let i = 0; row && i < STEPS_PER_CLAIM; i++) {
        const step = row.current_step_id ? graph.steps.get(row.current_step_id) : undefined;
        let history = row.current_history_id
          ? await this.executions.history(this.executions.pool, row.current_history_id)
          : null;
        if (!step) {
          // Nothing more to run (edits are refused while executions are active, so this is the graph's end).
          await this.executions.finishStep(row, { history: { status: 'SKIPPED' }, execution: { status: 'COMPLETED' } });
          return;
        }
        let fresh: { id: string; stepId: string; stepType: string; startedAt: Date } | undefined;
        if (!history || history.finished_at) {
          if (LOCAL_STEPS.has(step.type)) {
            // No effect outside this database: the history row is written with the outcome, in one transaction.
            fresh = { id: randomUUID(), stepId: step.id, stepType: step.type, startedAt: new Date() };
            history = {
              id: fresh.id,
              execution_id: row.id,
              step_id: step.id,
              step_type: step.type,
              visit: 0,
              status: 'RUNNING',
              started_at: fresh.startedAt,
              finished_at: null,
              output: null,
              error: null,
            };
          } else history = await this.executions.beginStep(row, step);
        }
        if (!history) return; // the lease was lost (cancelled, or resumed by an event)
        const outcome = await this.step(graph, row, step, history);
        if (outcome.execution.status === 'RUNNING') outcome.execution.dueAt = new Date(Date.now() + this.leaseMs);
        row = await this.executions.finishStep(row, outcome, fresh);
        if (row?.status === 'WAITING' && row.wait_event) {
          // The awaited event may have been tracked after the step began but before the wait was written.
          await this.executions.resumeFromRecorded(row);
        }
        if (row && row.status !== 'RUNNING') return;
      }
      // Still running after a long chain of steps: due again now, for whichever worker is free.
      if (row) await this.executions.retryLater(row, 0);
    } catch (err) {
      if (!row) return;
      this.logger.warn({ err, executionId: row.id }, 'workflow step failed to run; will retry');
      await this.executions.retryLater(row, TRANSIENT_RETRY_MS).catch(() => undefined);
    }
  }

  /** The transition to follow from a step (by branch or wait outcome); ends the execution when there is none. */
  private next(graph: Graph, step: StepRow, label?: { branch?: string; waitOutcome?: string }) {
    const t = graph.transitions.find(
      (t) =>
        t.from_step_id === step.id &&
        (!label?.branch || t.branch === label.branch) &&
        (!label?.waitOutcome || t.wait_outcome === label.waitOutcome),
    );
    return t
      ? { status: 'RUNNING' as const, nextStepId: t.to_step_id }
      : { status: 'COMPLETED' as const, nextStepId: null };
  }

  private async step(graph: Graph, row: ExecutionRow, step: StepRow, history: HistoryRow): Promise<StepOutcome> {
    try {
      return await this.runStep(graph, row, step, history);
    } catch (err) {
      const permanent = err instanceof StepFailure || (isAppError(err) && err.status < 500 && err.status !== 429);
      if (!permanent || isDependencyUnavailable(err)) throw err;
      const error = err instanceof Error ? err.message : String(err);
      return { history: { status: 'FAILED', error }, execution: { status: 'FAILED', error: `${step.name}: ${error}` } };
    }
  }

  private async contact(row: ExecutionRow): Promise<ContactView> {
    const c = await this.contacts.get(row.project_id, row.contact_id);
    if (!c) throw new StepFailure('contact not found (deleted?)');
    return c;
  }

  private async runStep(graph: Graph, row: ExecutionRow, step: StepRow, history: HistoryRow): Promise<StepOutcome> {
    const config = step.config;
    const done = (output?: unknown, label?: { branch?: string; waitOutcome?: string }): StepOutcome => ({
      history: { status: 'COMPLETED', output },
      execution: this.next(graph, step, label),
    });
    const event = row.context.event as { name: string; data: Record<string, unknown> } | undefined;
    switch (step.type) {
      case 'TRIGGER':
        return done();
      case 'DELAY': {
        if (row.status === 'WAITING') return done();
        const until = new Date(Date.now() + durationMs(config as Duration));
        return {
          history: { status: 'WAITING', output: { until: until.toISOString() } },
          execution: { status: 'WAITING', dueAt: until },
        };
      }
      case 'WAIT_FOR_EVENT': {
        const c = config as WaitConfig;
        if (row.resume === 'EVENT') return done({ outcome: 'EVENT' }, { waitOutcome: 'EVENT' });
        if (row.status === 'WAITING') return done({ outcome: 'TIMEOUT' }, { waitOutcome: 'TIMEOUT' });
        const until = new Date(Date.now() + durationMs(c.timeout));
        return {
          history: { status: 'WAITING', output: { eventName: c.eventName, timeoutAt: until.toISOString() } },
          execution: { status: 'WAITING', dueAt: until, waitEvent: c.eventName },
        };
      }
      case 'CONDITION': {
        const contact = await this.contact(row);
        const yes = evaluateCondition((config as { condition: FilterTree }).condition, {
          contact,
          event,
          context: row.context,
        });
        const branch = yes ? 'yes' : 'no';
        return done({ branch }, { branch });
      }
      case 'SEND_EMAIL': {
        const contact = await this.contact(row);
        const dedupeKey = `workflow:${row.id}:${step.id}${history.visit > 1 ? `:${history.visit}` : ''}`;
        const variables = { ...contact.data, event: event?.data ?? {}, context: row.context };
        const r = await this.mail.queue(row.project_id, row.workflow_id, config as SendEmailConfig, {
          contact,
          variables,
          dedupeKey,
        });
        if (r.status === 'failed') throw new StepFailure(r.error ?? 'the email could not be rendered');
        return done({ emailId: r.emailId, status: r.status });
      }
      case 'UPDATE_CONTACT': {
        const c = config as UpdateContactConfig;
        await this.contacts.update(row.project_id, row.contact_id, { data: c.data, subscribed: c.subscribed });
        return done({ data: c.data, subscribed: c.subscribed });
      }
      case 'WEBHOOK':
        return this.callWebhook(graph, row, step, history, event);
      case 'EXIT':
        return { history: { status: 'COMPLETED' }, execution: { status: 'EXITED', nextStepId: null } };
      default:
        throw new StepFailure(`unknown step type ${step.type}`);
    }
  }

  private async callWebhook(
    graph: Graph,
    row: ExecutionRow,
    step: StepRow,
    history: HistoryRow,
    event: { name: string; data: Record<string, unknown> } | undefined,
  ): Promise<StepOutcome> {
    const c = step.config as WebhookConfig;
    const contact = await this.contact(row);
    const contactJson = { id: contact.id, email: contact.email, subscribed: contact.subscribed, data: contact.data };
    const vars = { contact: contactJson, data: contact.data, event: event ?? null, context: row.context };
    let data: unknown = null;
    try {
      data = c.body === undefined ? null : await renderJson(c.body, vars);
    } catch (err) {
      throw new StepFailure(`body did not render: ${err instanceof Error ? err.message : String(err)}`);
    }
    const deliveryId = `${row.id}:${step.id}:${history.visit}`;
    const payload = {
      id: deliveryId,
      type: 'workflow.webhook',
      timestamp: new Date().toISOString(),
      workflow: { id: graph.workflow.id, name: graph.workflow.name },
      execution: { id: row.id, startedAt: row.started_at.toISOString() },
      step: { id: step.id, name: step.name },
      contact: contactJson,
      event: event ?? null,
      context: row.context,
      data,
    };
    const secret = await this.workflows.webhookSecret(row.project_id, `whsec_${randomBytes(24).toString('hex')}`);
    const r = await deliverWebhook(
      { url: c.url, method: c.method ?? 'POST', headers: c.headers ?? {}, payload, deliveryId, secret },
      this.webhook,
    );
    const output = { status: r.status, attempts: r.attempts, response: r.response };
    if (!r.ok) {
      return {
        history: { status: 'FAILED', output, error: r.error },
        execution: { status: 'FAILED', error: `${step.name}: ${r.error}` },
      };
    }
    return { history: { status: 'COMPLETED', output }, execution: this.next(graph, step) };
  }
}
