import { randomBytes, randomUUID } from 'node:crypto';
import { isDependencyUnavailable } from '@svc/lib/dependency-errors';
import { isAppError } from '@svc/lib/errors';
import type { Logger } from '@svc/lib/logger';
import { workflowLoopGuards } from '@svc/lib/metrics';
import type { NotifiedCache } from '@svc/lib/notified-cache';
import { TickBatch } from '@svc/lib/tick-batch';
import {
  type ExecutionRow,
  type ExecutionsStore,
  type FreshHistory,
  freshHistory,
  type HistoryRow,
  type ChainedStep,
  type StepOutcome,
} from '../store/executions-store.js';
import type { StepRow, TransitionRow, WorkflowRow, WorkflowsStore } from '../store/workflows-store.js';
import { evaluateCondition, type FilterTree } from './condition.js';
import { renderJson } from './liquid.js';
import type { ContactsPort, ContactView, MailPort, MailRecipient, QueuedMail } from './ports.js';
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
/**
 * Steps an execution may run without passing a DELAY or WAIT_FOR_EVENT step (README "Workflows", loop guards): one
 * that has run more is FAILED. Only a cycle without a wait comes near it, which is refused when a workflow is
 * enabled (graph.ts assertNoBusyCycle), but a workflow enabled before that check can have one. Counted when a claim
 * ends with the execution still running (every STEPS_PER_CLAIM steps), so such a loop stops within 150 steps.
 */
export const MAX_BUSY_STEPS = 100;
const TRANSIENT_RETRY_MS = 5_000;
/**
 * Recipients of one QueueEmails call at most (a claimed batch holds up to 500 executions): messaging renders a
 * call's emails within one time budget (2 s), so a template slow to render still gets ~20 ms per email.
 */
const MAIL_BATCH = 100;
/** Steps whose effects stay in this database (their visit number is not used as an idempotency key). */
const LOCAL_STEPS = new Set(['TRIGGER', 'CONDITION', 'DELAY', 'WAIT_FOR_EVENT', 'EXIT']);
/**
 * Steps run right after the step before them in the same round, their history rows written with its outcome:
 * local, never waiting, never revisited without a DELAY or wait between (cycles without one are refused).
 */
const CHAINED_STEPS = new Set(['CONDITION', 'EXIT']);
/**
 * Steps with an effect outside this database that also run in the chain of an execution still on its TRIGGER.
 * Nothing leads into a TRIGGER, so such an execution has written no history row yet: every step its chain reaches
 * is on its first visit, and its idempotency key (SEND_EMAIL's dedupe key) needs no history row opened first. A
 * crash before the chain's write leaves the execution on its TRIGGER, and the rerun sends the same key.
 */
const FIRST_VISIT_CHAINED_STEPS = new Set(['SEND_EMAIL']);

interface Graph {
  workflow: WorkflowRow;
  steps: Map<string, StepRow>;
  transitions: TransitionRow[];
}

class StepFailure extends Error {}

/** A claimed execution in a batch, with the graph of its workflow. */
interface Item {
  row: ExecutionRow;
  graph: Graph;
  /** The history row of its current step, opened by the last round's write (no read needed). */
  open?: HistoryRow;
}

/** What one claimed batch shares: contacts read once, emails of a step queued together, side chains. */
class BatchContext {
  readonly contacts = new Map<string, Promise<ContactView | null>>();
  readonly side: Promise<void>[] = [];
  constructor(
    readonly contactLoader: TickBatch<string, string, ContactView | null>,
    readonly mailLoader: TickBatch<string, MailInput, QueuedMail>,
  ) {}
}

interface MailInput {
  projectId: string;
  workflowId: string;
  config: SendEmailConfig;
  recipient: MailRecipient;
}

/**
 * Runs executions a worker claimed: the current step, then the next, until one waits or the
 * execution ends. The batch moves in rounds, one step of every execution per round, so a round
 * reads the contacts it needs in one RPC (per project), queues the emails of a SEND_EMAIL step in
 * one QueueEmails call and writes every step outcome in one statement. Each step's outcome and
 * the execution's next state are still written together and atomically (one statement), only while
 * the claim's lease holds, so a worker that dies mid-step leaves the step to be run again by the next
 * claim; the effects that leave the service are keyed so a rerun is harmless (SEND_EMAIL's dedupe
 * key `workflow:<executionId>:<stepId>`, the webhook's X-Webhook-Id).
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
    /** Graphs kept until a workflow, step or transition changes (edits are refused while executions are active). */
    private readonly cache?: NotifiedCache,
  ) {}

  /** Runs a claimed batch; each workflow's graph is read once per batch (edits are refused while it runs). */
  async runClaimed(rows: ExecutionRow[]): Promise<void> {
    const graphs = new Map<string, Promise<Graph | null>>();
    const graph = (r: ExecutionRow) => {
      let g = graphs.get(r.workflow_id);
      if (!g) {
        const load = () => this.graph(r.project_id, r.workflow_id);
        g = this.cache ? this.cache.get(`graph:${r.project_id}:${r.workflow_id}`, load) : load();
        graphs.set(r.workflow_id, g);
      }
      return g;
    };
    let items: Item[];
    try {
      const found = await Promise.all(rows.map(async (row) => ({ row, graph: await graph(row) })));
      items = found.filter((x): x is Item => x.graph !== null);
    } catch (err) {
      this.logger.warn({ err, executions: rows.length }, 'workflow graphs could not be read; will retry');
      await this.executions.retryLater(rows, TRANSIENT_RETRY_MS).catch(() => undefined);
      return;
    }
    const ctx = new BatchContext(
      new TickBatch(async (projectId, ids) => {
        const found = await this.contacts.getMany(projectId, [...new Set(ids)]);
        return ids.map((id) => found.get(id) ?? null);
      }),
      new TickBatch(async (_key, inputs) => {
        const { projectId, workflowId, config } = inputs[0];
        const queued = await this.workflows.whileExists(workflowId, () =>
          this.mail.queue(
            projectId,
            workflowId,
            config,
            inputs.map((i) => i.recipient),
          ),
        );
        // Gone: its project was wiped (with the executions, so these outcomes are written nowhere).
        return queued ?? inputs.map(() => ({ status: 'failed', emailId: '', error: 'The workflow was deleted' }));
      }, MAIL_BATCH),
    );
    await this.rounds(items, ctx);
    // WEBHOOK steps run on their own chains, so a slow receiver holds up only its execution.
    while (ctx.side.length) await Promise.all(ctx.side.splice(0));
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

  /** Moves the executions step by step until each waits or ends (at most STEPS_PER_CLAIM steps). */
  private async rounds(items: Item[], ctx: BatchContext): Promise<void> {
    for (let i = 0; items.length && i < STEPS_PER_CLAIM; i++) {
      try {
        items = await this.round(items, ctx);
      } catch (err) {
        this.logger.warn({ err, executions: items.length }, 'workflow steps failed to run; will retry');
        await this.executions
          .retryLater(
            items.map((x) => x.row),
            TRANSIENT_RETRY_MS,
          )
          .catch(() => undefined);
        return;
      }
    }
    // Still running after a long chain of steps: due again now, for whichever worker is free (unless in a busy loop).
    if (items.length) await this.continueOrStop(items);
  }

  /**
   * Executions still running after a claim's STEPS_PER_CLAIM steps: those that have run more than MAX_BUSY_STEPS
   * steps since their last DELAY or wait are FAILED on their current step; the others are due again now.
   */
  private async continueOrStop(items: Item[]): Promise<void> {
    const busy = await this.executions.busySteps(items.map((x) => x.row.id)).catch((err: unknown) => {
      this.logger.warn({ err, executions: items.length }, 'busy steps could not be counted; checked next time');
      return new Map<string, number>();
    });
    const stop: Item[] = [];
    const go: Item[] = [];
    for (const x of items) {
      const looping = (busy.get(x.row.id) ?? 0) > MAX_BUSY_STEPS && x.row.current_step_id;
      (looping && x.graph.steps.has(x.row.current_step_id!) ? stop : go).push(x);
    }
    if (stop.length) {
      const error = `ran more than ${MAX_BUSY_STEPS} steps without a DELAY or WAIT_FOR_EVENT step: stopped as a loop`;
      const written = await this.executions.finishSteps(
        stop.map((x) => {
          const step = x.graph.steps.get(x.row.current_step_id!)!;
          // The step's history row when the last round opened it (a step with effects outside this database).
          const opened = x.open?.id === x.row.current_history_id && !x.open.finished_at;
          return {
            row: x.row,
            fresh: opened
              ? undefined
              : { id: randomUUID(), stepId: step.id, stepType: step.type, startedAt: new Date() },
            outcome: {
              history: { status: 'FAILED', error },
              execution: { status: 'FAILED', error: `${step.name}: ${error}` },
            },
          };
        }),
      );
      workflowLoopGuards.inc({ guard: 'busy_steps' }, written.size);
      for (const id of written.keys()) this.logger.warn({ executionId: id }, `workflow execution ${error}`);
    }
    if (go.length) {
      await this.executions.retryLater(
        go.map((x) => x.row),
        0,
      );
    }
  }

  /** One step of each execution; returns those still RUNNING (their next step is due now). */
  private async round(items: Item[], ctx: BatchContext): Promise<Item[]> {
    const known = items.flatMap((x) => (x.open && x.open.id === x.row.current_history_id ? [x.open] : []));
    for (const x of items) x.open = undefined;
    const open = await this.executions.histories(
      items
        .map((x) => x.row.current_history_id)
        .filter((id): id is string => Boolean(id) && !known.some((h) => h.id === id)),
    );
    for (const h of known) open.set(h.id, h);
    const work: { item: Item; step?: StepRow; history: HistoryRow | null; fresh?: FreshHistory }[] = [];
    const begin: { item: Item; step: StepRow }[] = [];
    for (const item of items) {
      const { row, graph } = item;
      const step = row.current_step_id ? graph.steps.get(row.current_step_id) : undefined;
      const history = row.current_history_id ? (open.get(row.current_history_id) ?? null) : null;
      if (step?.type === 'WEBHOOK' && items.length > 1) {
        ctx.side.push(this.rounds([item], ctx));
        continue;
      }
      if (!step || (history && !history.finished_at)) work.push({ item, step, history });
      else if (LOCAL_STEPS.has(step.type)) {
        // No effect outside this database: the history row is written with the outcome, in one statement.
        const fresh = { id: randomUUID(), stepId: step.id, stepType: step.type, startedAt: new Date() };
        work.push({ item, step, fresh, history: freshHistory(row, fresh) });
      } else begin.push({ item, step });
    }
    if (begin.length) {
      // The history row is opened first: its visit number is part of the step's idempotency key.
      const begun = await this.executions.beginSteps(begin.map((b) => ({ row: b.item.row, step: b.step })));
      for (const b of begin) {
        const history = begun.get(b.item.row.id);
        if (history) work.push({ item: b.item, step: b.step, history }); // else: the lease was lost
      }
    }
    const results = await Promise.all(
      work.map(async (w) => {
        try {
          if (!w.step) {
            // Nothing more to run (edits are refused while executions are active, so this is the graph's end).
            const outcome: StepOutcome = { history: { status: 'SKIPPED' }, execution: { status: 'COMPLETED' } };
            return { ...w, outcome, chain: [] };
          }
          const first = await this.step(w.item.graph, w.item.row, w.step, w.history!, ctx);
          const { outcome, chain } = await this.chain(w.item, w.step, first, w.history!.started_at, ctx);
          if (outcome.execution.status === 'RUNNING') outcome.execution.dueAt = new Date(Date.now() + this.leaseMs);
          return { ...w, outcome, chain };
        } catch (err) {
          this.logger.warn({ err, executionId: w.item.row.id }, 'workflow step failed to run; will retry');
          return { ...w, outcome: undefined };
        }
      }),
    );
    const failed = results.filter((r) => !r.outcome).map((r) => r.item.row);
    if (failed.length) await this.executions.retryLater(failed, TRANSIENT_RETRY_MS).catch(() => undefined);
    const done = results.filter((r): r is typeof r & { outcome: StepOutcome } => Boolean(r.outcome));
    const written = await this.executions.finishSteps(
      done.map((d) => ({
        row: d.item.row,
        outcome: d.outcome,
        fresh: d.fresh,
        chain: d.chain,
        open: this.opening(d.item.graph, d.outcome),
        firstVisit: d.step?.type === 'TRIGGER' && d.fresh !== undefined,
      })),
    );
    const next: Item[] = [];
    const waits: Promise<unknown>[] = [];
    for (const d of done) {
      const found = written.get(d.item.row.id);
      if (!found) continue; // the lease was lost (cancelled, or resumed by an event)
      const { opened, ...row } = found;
      d.item.row = row;
      d.item.open = opened;
      // The awaited event may have been tracked after the step began but before the wait was written.
      if (row.status === 'WAITING' && row.wait_event) waits.push(this.executions.resumeFromRecorded(row));
      if (row.status === 'RUNNING') next.push(d.item);
    }
    await Promise.all(waits);
    return next;
  }

  /**
   * The next step's history row to open with this outcome's write, when that step has effects outside this
   * database: the next round then runs it at once, without a statement of its own to open it (beginSteps).
   */
  private opening(graph: Graph, outcome: StepOutcome): FreshHistory | undefined {
    const x = outcome.execution;
    if (x.status !== 'RUNNING' || !x.nextStepId) return undefined;
    const step = graph.steps.get(x.nextStepId);
    if (!step || LOCAL_STEPS.has(step.type)) return undefined;
    return { id: randomUUID(), stepId: step.id, stepType: step.type, startedAt: new Date() };
  }

  /**
   * Runs the CONDITION and EXIT steps that follow a step in the same round (TRIGGER -> CONDITION, SEND_EMAIL ->
   * EXIT), and from a TRIGGER also SEND_EMAIL (FIRST_VISIT_CHAINED_STEPS): one statement writes them all with
   * the first step's outcome, under the same lease, so a lost lease or a crash leaves none of them written. A
   * chained step that cannot run now (contacts down) ends the chain: the next round runs it again.
   */
  private async chain(item: Item, from: StepRow, first: StepOutcome, since: Date, ctx: BatchContext) {
    const chain: ChainedStep[] = [];
    let startedAt = since;
    const visited = new Set([from.id]);
    const chained = (type: string) =>
      CHAINED_STEPS.has(type) || (from.type === 'TRIGGER' && FIRST_VISIT_CHAINED_STEPS.has(type));
    let execution = first.execution;
    while (execution.status === 'RUNNING' && execution.nextStepId) {
      const step = item.graph.steps.get(execution.nextStepId);
      if (!step || !chained(step.type) || visited.has(step.id)) break;
      visited.add(step.id);
      // History lists steps by start time: a step chained within the same millisecond as the one before it
      // starts a millisecond later, so the list keeps the order the steps ran in.
      startedAt = new Date(Math.max(Date.now(), startedAt.getTime() + 1));
      const fresh = { id: randomUUID(), stepId: step.id, stepType: step.type, startedAt };
      let next: StepOutcome;
      try {
        next = await this.step(item.graph, item.row, step, freshHistory(item.row, fresh), ctx);
      } catch {
        break;
      }
      chain.push({ fresh, history: next.history });
      execution = next.execution;
    }
    return { outcome: { history: first.history, execution }, chain };
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

  private async step(
    graph: Graph,
    row: ExecutionRow,
    step: StepRow,
    history: HistoryRow,
    ctx: BatchContext,
  ): Promise<StepOutcome> {
    try {
      return await this.runStep(graph, row, step, history, ctx);
    } catch (err) {
      const permanent = err instanceof StepFailure || (isAppError(err) && err.status < 500 && err.status !== 429);
      if (!permanent || isDependencyUnavailable(err)) throw err;
      const error = err instanceof Error ? err.message : String(err);
      return { history: { status: 'FAILED', error }, execution: { status: 'FAILED', error: `${step.name}: ${error}` } };
    }
  }

  /** The execution's contact, read once per batch (together with the batch's other contacts). */
  private async contact(row: ExecutionRow, ctx: BatchContext): Promise<ContactView> {
    const key = `${row.project_id}:${row.contact_id}`;
    let c = ctx.contacts.get(key);
    if (!c) {
      c = ctx.contactLoader.load(row.project_id, row.contact_id);
      c.catch(() => ctx.contacts.delete(key));
      ctx.contacts.set(key, c);
    }
    const contact = await c;
    if (!contact) throw new StepFailure('contact not found (deleted?)');
    return contact;
  }

  private async runStep(
    graph: Graph,
    row: ExecutionRow,
    step: StepRow,
    history: HistoryRow,
    ctx: BatchContext,
  ): Promise<StepOutcome> {
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
        const contact = await this.contact(row, ctx);
        const yes = evaluateCondition((config as { condition: FilterTree }).condition, {
          contact,
          event,
          context: row.context,
        });
        const branch = yes ? 'yes' : 'no';
        return done({ branch }, { branch });
      }
      case 'SEND_EMAIL': {
        const contact = await this.contact(row, ctx);
        const dedupeKey = `workflow:${row.id}:${step.id}${history.visit > 1 ? `:${history.visit}` : ''}`;
        const variables = { ...contact.data, event: event?.data ?? {}, context: row.context };
        // The emails of one step in this batch go out in one QueueEmails call.
        const r = await ctx.mailLoader.load(`${row.project_id}:${row.workflow_id}:${step.id}`, {
          projectId: row.project_id,
          workflowId: row.workflow_id,
          config: config as SendEmailConfig,
          recipient: { contact, variables, dedupeKey, chainDepth: row.chain_depth ?? 0 },
        });
        if (r.status === 'failed') throw new StepFailure(r.error ?? 'the email could not be rendered');
        return done({ emailId: r.emailId, status: r.status });
      }
      case 'UPDATE_CONTACT': {
        const c = config as UpdateContactConfig;
        await this.contacts.update(row.project_id, row.contact_id, { data: c.data, subscribed: c.subscribed });
        ctx.contacts.delete(`${row.project_id}:${row.contact_id}`); // the next step reads the updated contact
        return done({ data: c.data, subscribed: c.subscribed });
      }
      case 'WEBHOOK':
        return this.callWebhook(graph, row, step, history, event, ctx);
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
    ctx: BatchContext,
  ): Promise<StepOutcome> {
    const c = step.config as WebhookConfig;
    const contact = await this.contact(row, ctx);
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
