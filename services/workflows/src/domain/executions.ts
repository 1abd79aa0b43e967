import { withTransaction } from '@svc/lib/db';
import { conflict, notFound } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import { workflowLoopGuards } from '@svc/lib/metrics';
import type { NotifiedCache } from '@svc/lib/notified-cache';
import type {
  EnrolledExecution,
  ExecutionRow,
  ExecutionsStore,
  HistoryRow,
  TriggeredEnrolment,
} from '../store/executions-store.js';
import type { WorkflowRow, WorkflowsStore } from '../store/workflows-store.js';
import { assertRunnable } from './graph.js';
import type { ContactsPort } from './ports.js';
import { graphSteps, graphTransitions } from './workflows.js';
import { StatementBatch } from './statement-batch.js';
import { EXECUTION_STATUSES, parseStart } from './workflow-input.js';
import { validationError } from '@svc/lib/errors';

/** Scalar data fields of an event, for GET /workflows/fields. */
function dataFields(data: Record<string, unknown>, prefix = ''): { field: string; type: string }[] {
  return Object.entries(data).flatMap(([k, v]) => {
    if (v && typeof v === 'object' && !Array.isArray(v) && prefix.split('.').length < 5) {
      return dataFields(v as Record<string, unknown>, `${prefix}${k}.`);
    }
    const type = typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'string';
    return v === null || v === undefined ? [] : [{ field: `${prefix}${k}`, type }];
  });
}

/** A tracked event of a contact, as the engine reacts to it (an event without an id keyed by its bus message). */
export interface TrackedEvent {
  projectId: string;
  contactId: string;
  eventId: string;
  name: string;
  data: Record<string, unknown>;
  at: Date;
  /** The workflow that sent the email of a lifecycle event: that workflow is not started by the event. */
  sourceWorkflowId?: string;
  /** With sourceWorkflowId: the chain depth of the execution that sent the email (EmailLifecycle.workflow_depth). */
  sourceDepth?: number;
}

/**
 * How many workflows in a row may be started by the mail of the one before (README "Workflows", loop guards): an
 * execution started by a lifecycle event of workflow mail is one deeper than the execution that sent it, and one
 * deeper than this is not started. Two workflows that mail on each other's email.sent stop after six emails.
 */
export const MAX_CHAIN_DEPTH = 5;

/** Executions: enrolment (events and manual starts, with the re-entry rules), listing and cancelling. */
export class Executions {
  /** Event data fields recorded or being recorded (event_fields only grows: a known field needs no write). */
  private readonly knownFields = new Map<string, Promise<void> | true>();
  /** Enrolments of events handled side by side share one statement (its own transaction). */
  private readonly enrolments: StatementBatch<TriggeredEnrolment, EnrolledExecution[]>;

  constructor(
    private readonly workflows: WorkflowsStore,
    private readonly store: ExecutionsStore,
    private readonly contacts: ContactsPort,
    private readonly logger: Logger,
    /** Which events a project's workflows start on or await, kept until a workflow or step changes. */
    private readonly cache?: NotifiedCache,
  ) {
    this.enrolments = new StatementBatch((events) => store.enrolTriggered(store.pool, events));
  }

  /** Whether enabled workflows start on the event name, and whether a WAIT_FOR_EVENT step awaits it. */
  private interest(projectId: string, name: string) {
    const load = () => this.workflows.interest(projectId, name);
    return this.cache ? this.cache.get(`interest:${projectId}:${name}`, load) : load();
  }

  /** Whether the event is known (cached, no read) to start no workflow and resume no wait: nothing to do. */
  ignores(projectId: string, name: string): boolean {
    const known = this.cache?.peek(`interest:${projectId}:${name}`) as
      | { triggered: boolean; awaited: boolean }
      | undefined;
    return known !== undefined && !known.triggered && !known.awaited;
  }

  private async workflow(projectId: string, id: string): Promise<WorkflowRow> {
    const w = isUuid(id) ? await this.workflows.get(this.workflows.pool, projectId, id) : null;
    if (!w) throw notFound('Workflow', id, 'WORKFLOW_NOT_FOUND');
    return w;
  }

  /**
   * A tracked event: resumes this contact's executions waiting for it, then starts the enabled
   * workflows it triggers, once per event id (redelivery finds the execution already there).
   */
  async eventTracked(m: TrackedEvent): Promise<void> {
    // One query for the many events no workflow cares about (most email lifecycle messages).
    const interest = await this.interest(m.projectId, m.name);
    // Otherwise no WAIT_FOR_EVENT step awaits the name, so no execution waits for it (no step edits while active).
    if (interest.awaited) {
      await this.store.recordAwaited(m.projectId, m.contactId, m.name, m.at, m.data);
      await this.store.resumeWaiting(m.projectId, m.contactId, m.name, m.at, m.data);
    }
    if (!interest.triggered) return;
    const chainDepth = m.sourceWorkflowId ? (m.sourceDepth ?? 0) + 1 : 0;
    if (chainDepth > MAX_CHAIN_DEPTH) {
      workflowLoopGuards.inc({ guard: 'chain_depth' });
      this.logger.warn(
        { projectId: m.projectId, contactId: m.contactId, event: m.name, sourceWorkflowId: m.sourceWorkflowId },
        `workflow mail ${MAX_CHAIN_DEPTH} workflows deep: its ${m.name} starts no workflow (a loop between workflows?)`,
      );
      return;
    }
    await this.recordEventFields(m.projectId, m.name, m.data);
    await this.enrolments.submit({
      projectId: m.projectId,
      contactId: m.contactId,
      eventName: m.name,
      context: { event: { id: m.eventId, name: m.name, data: m.data } },
      triggerKey: m.eventId,
      since: m.at,
      sourceWorkflowId: m.sourceWorkflowId,
      chainDepth,
    });
  }

  /**
   * Keeps the trigger event's data fields for GET /workflows/fields (each one written once per process). An event
   * whose field is being written by another waits for that write instead of writing it again (the consumer holds
   * 128 events at once: the first of each field came in as that many statements).
   */
  private async recordEventFields(projectId: string, name: string, data: Record<string, unknown>): Promise<void> {
    const writes = new Set<Promise<void>>();
    const fresh: { field: string; type: string }[] = [];
    for (const f of dataFields(data).slice(0, 100)) {
      const known = this.knownFields.get(`${projectId}\u0000${name}\u0000${f.field}`);
      if (known === undefined) fresh.push(f);
      else if (known !== true) writes.add(known);
    }
    if (fresh.length) {
      if (this.knownFields.size > 100_000) this.knownFields.clear();
      const keys = fresh.map((f) => `${projectId}\u0000${name}\u0000${f.field}`);
      const write = this.workflows.recordEventFields(projectId, name, fresh).then(
        () => {
          for (const k of keys) if (this.knownFields.get(k) === write) this.knownFields.set(k, true);
        },
        (err: unknown) => {
          // Tried again by the next event with the field (this one fails, and its message comes again).
          for (const k of keys) if (this.knownFields.get(k) === write) this.knownFields.delete(k);
          throw err;
        },
      );
      for (const k of keys) this.knownFields.set(k, write);
      writes.add(write);
    }
    if (writes.size) await Promise.all(writes);
  }

  /** POST /workflows/{id}/executions: a manual start (any trigger type, enabled or not, if the graph can run). */
  async start(projectId: string, workflowId: string, body: unknown): Promise<ExecutionRow> {
    const b = parseStart(body);
    const w = await this.workflow(projectId, workflowId);
    const [steps, transitions] = await Promise.all([
      this.workflows.steps(this.workflows.pool, w.id),
      this.workflows.transitions(this.workflows.pool, w.id),
    ]);
    assertRunnable(graphSteps(steps), graphTransitions(transitions));
    const contact = b.contactId
      ? await this.contacts.get(projectId, b.contactId)
      : await this.contacts.byEmail(projectId, b.email!);
    if (!contact) throw notFound('Contact', b.contactId ?? b.email!, 'CONTACT_NOT_FOUND');
    const r = await withTransaction(this.store.pool, (db) =>
      this.store.enrol(
        db,
        { projectId, workflowId: w.id, contactId: contact.id, context: b.context, triggerKey: null, since: new Date() },
        w.allow_reentry,
      ),
    );
    if (!r.row) {
      throw conflict(
        r.refusal === 'active'
          ? 'The contact already has an active execution of this workflow'
          : 'The contact was already enrolled in this workflow, which does not allow re-entry',
        { contactId: contact.id },
      );
    }
    return r.row;
  }

  async list(projectId: string, workflowId: string, status: string, page: number, pageSize: number) {
    const s = status.toUpperCase();
    if (s && !(EXECUTION_STATUSES as readonly string[]).includes(s)) {
      throw validationError([
        {
          field: 'status',
          message: `status must be one of ${EXECUTION_STATUSES.join(', ')}`,
          code: 'invalid_enum_value',
        },
      ]);
    }
    const w = await this.workflow(projectId, workflowId);
    return this.store.list(w.id, s || null, pageSize, (page - 1) * pageSize);
  }

  async get(projectId: string, workflowId: string, id: string): Promise<{ row: ExecutionRow; steps: HistoryRow[] }> {
    const w = await this.workflow(projectId, workflowId);
    const row = isUuid(id) ? await this.store.get(this.store.pool, w.id, id) : null;
    if (!row) throw notFound('Execution', id);
    return { row, steps: await this.store.steps(row.id) };
  }

  async cancel(projectId: string, workflowId: string, id: string): Promise<ExecutionRow> {
    const { row } = await this.get(projectId, workflowId, id);
    const [cancelled] = await withTransaction(this.store.pool, (db) => this.store.cancel(db, row.workflow_id, row.id));
    if (!cancelled) throw conflict(`Execution is ${row.status}: only RUNNING or WAITING executions can be cancelled`);
    return cancelled;
  }

  async cancelAll(projectId: string, workflowId: string): Promise<number> {
    const w = await this.workflow(projectId, workflowId);
    const rows = await withTransaction(this.store.pool, (db) => this.store.cancel(db, w.id, null));
    this.logger.info({ workflowId: w.id, cancelled: rows.length }, 'executions cancelled');
    return rows.length;
  }
}
