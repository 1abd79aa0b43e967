import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient, Queryable } from '@svc/lib/db';
import { uuidv7 } from '@svc/lib/ids';

export type ExecutionStatus = 'RUNNING' | 'WAITING' | 'COMPLETED' | 'EXITED' | 'FAILED' | 'CANCELLED';
export const ACTIVE: ExecutionStatus[] = ['RUNNING', 'WAITING'];

export interface ExecutionRow {
  id: string;
  project_id: string;
  workflow_id: string;
  contact_id: string;
  status: ExecutionStatus;
  context: Record<string, unknown>;
  trigger_key: string | null;
  current_step_id: string | null;
  current_history_id: string | null;
  resume: 'EVENT' | null;
  wait_event: string | null;
  waiting_since: Date | null;
  since: Date | null;
  due_at: Date | null;
  lease_token: string | null;
  error: string | null;
  started_at: Date;
  finished_at: Date | null;
  updated_at: Date;
  /** Workflows started by workflow mail before this one (store migration 011; README "Workflows", loop guards). */
  chain_depth: number;
}
export interface HistoryRow {
  id: string;
  execution_id: string;
  step_id: string;
  step_type: string;
  visit: number;
  status: string;
  started_at: Date;
  finished_at: Date | null;
  output: unknown;
  error: string | null;
}

/** A tracked event to enrol its contact in the workflows it triggers (keyed by the event's id). */
export interface TriggeredEnrolment {
  projectId: string;
  contactId: string;
  eventName: string;
  context: object;
  triggerKey: string;
  since: Date;
  /** The workflow the event came from (a lifecycle event of an email it sent): not started by it. */
  sourceWorkflowId?: string;
  /** The chain depth of the executions it starts (0 when absent). */
  chainDepth?: number;
}

/** A new execution as enrolment answers it (the worker reads the rest when it claims the row). */
export type EnrolledExecution = Pick<ExecutionRow, 'id' | 'workflow_id' | 'project_id' | 'contact_id' | 'trigger_key'>;

/** NOTIFY channel of the execution worker: a row became due now. */
export const DUE_CHANNEL = 'workflow_executions_due';

/** What a finished step leaves behind, written in one transaction with the execution's next state. */
export interface StepOutcome {
  history: { status: 'COMPLETED' | 'FAILED' | 'WAITING' | 'SKIPPED'; output?: unknown; error?: string };
  execution: {
    status: ExecutionStatus;
    nextStepId?: string | null;
    dueAt?: Date | null;
    waitEvent?: string | null;
    contextPatch?: Record<string, unknown>;
    error?: string | null;
  };
}

/** A step whose history row is written with its outcome (no effect outside this database). */
export interface FreshHistory {
  id: string;
  stepId: string;
  stepType: string;
  startedAt: Date;
}

/** A step run right after the one before it in the same round, written in the same statement (engine chain()). */
export interface ChainedStep {
  fresh: FreshHistory;
  history: StepOutcome['history'];
}

/** The history row a fresh step will have, as the step sees it while it runs. */
export function freshHistory(row: ExecutionRow, fresh: FreshHistory): HistoryRow {
  return {
    id: fresh.id,
    execution_id: row.id,
    step_id: fresh.stepId,
    step_type: fresh.stepType,
    visit: 0,
    status: 'RUNNING',
    started_at: fresh.startedAt,
    finished_at: null,
    output: null,
    error: null,
  };
}

export class ExecutionsStore {
  constructor(readonly pool: Pool) {}

  /**
   * Enrols a contact: one execution per (workflow, trigger key) by the unique index, and the
   * re-entry rule checked under a per-(workflow, contact) advisory lock so two messages for the
   * same contact cannot both pass it. Null when the rules or the key refused it.
   */
  async enrol(
    db: PoolClient,
    e: {
      projectId: string;
      workflowId: string;
      contactId: string;
      context: object;
      triggerKey: string | null;
      since: Date;
    },
    allowReentry: boolean,
  ): Promise<{ row: ExecutionRow | null; refusal?: 'active' | 'before' }> {
    // FOR SHARE: enrolments run side by side, but not beside a structural edit (which locks FOR UPDATE).
    const { rows: trigger } = await db.query<{ id: string }>(
      `SELECT s.id FROM workflows w JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER'
       WHERE w.id = $1 FOR SHARE OF w`,
      [e.workflowId],
    );
    if (!trigger[0]) return { row: null };
    await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${e.workflowId}:${e.contactId}`]);
    const { rows: prior } = await db.query<{ active: boolean }>(
      `SELECT bool_or(status IN ('RUNNING', 'WAITING')) AS active FROM executions
       WHERE workflow_id = $1 AND contact_id = $2 HAVING count(*) > 0`,
      [e.workflowId, e.contactId],
    );
    if (prior.length && (!allowReentry || prior[0].active)) {
      return { row: null, refusal: prior[0].active ? 'active' : 'before' };
    }
    const { rows } = await db.query<ExecutionRow>(
      `INSERT INTO executions
         (id, project_id, workflow_id, contact_id, status, context, trigger_key, current_step_id, due_at, since)
       VALUES ($1, $2, $3, $4, 'RUNNING', $5, $6, $7, now(), $8)
       ON CONFLICT (workflow_id, trigger_key) WHERE trigger_key IS NOT NULL DO NOTHING
       RETURNING *`,
      [
        uuidv7(),
        e.projectId,
        e.workflowId,
        e.contactId,
        JSON.stringify(e.context),
        e.triggerKey,
        trigger[0].id,
        e.since,
      ],
    );
    if (rows[0]) await db.query(`SELECT pg_notify('${DUE_CHANNEL}', '')`);
    return { row: rows[0] ?? null };
  }

  /**
   * Enrols the contacts of tracked events in every enabled workflow each event triggers, in one statement for
   * the whole list (store migration 004, `enrol_triggered`): the workflows are locked FOR SHARE (not beside a
   * structural edit) with the per-(workflow, contact) advisory locks of `enrol`, then one INSERT applies the
   * re-entry rule and the (workflow, trigger key) uniqueness to all of them. A contact that comes twice in the
   * list is enrolled in a later wave of the same transaction, which sees the first one's rows. Answers the new
   * executions of each event (a duplicate event, same contact and key, gets them once).
   */
  async enrolTriggered(db: Queryable, events: TriggeredEnrolment[]): Promise<EnrolledExecution[][]> {
    const out: EnrolledExecution[][] = events.map(() => []);
    if (!events.length) return out;
    const waves = new Map<string, number>();
    const first = new Map<string, number>();
    const input = events.map((e, i) => {
      const contact = `${e.projectId}:${e.contactId}`.toLowerCase();
      const wave = waves.get(contact) ?? 0;
      waves.set(contact, wave + 1);
      const key = `${contact}:${e.triggerKey}`;
      if (!first.has(key)) first.set(key, i);
      return {
        project_id: e.projectId,
        event_name: e.eventName,
        contact_id: e.contactId,
        context: e.context,
        trigger_key: e.triggerKey,
        since: e.since,
        wave,
        source_workflow: e.sourceWorkflowId ?? null,
        depth: e.chainDepth ?? 0,
      };
    });
    const { rows } = await db.query<EnrolledExecution>(
      'SELECT id, workflow_id, project_id, contact_id, trigger_key FROM enrol_triggered_v4($1::jsonb)',
      [JSON.stringify(input)],
    );
    for (const row of rows) {
      const i = first.get(`${row.project_id}:${row.contact_id}:${row.trigger_key}`);
      if (i !== undefined) out[i].push(row);
    }
    return out;
  }

  /**
   * Claims due executions (index executions_due; SKIP LOCKED lets replicas share the work). The
   * claim pushes due_at out by the lease and sets a new lease token: a worker that dies leaves the
   * row due again after the lease, and a worker whose lease was taken over cannot write.
   */
  async claim(limit: number, leaseMs: number): Promise<ExecutionRow[]> {
    // Store migration 007, claim_due: the statement as a generic plan that always walks executions_due in order.
    const { rows } = await this.pool.query<ExecutionRow>('SELECT * FROM claim_due($1, $2)', [limit, leaseMs]);
    return rows;
  }

  /** History rows by id (the open rows of a batch's executions). */
  async histories(ids: string[]): Promise<Map<string, HistoryRow>> {
    if (!ids.length) return new Map();
    const { rows } = await this.pool.query<HistoryRow>('SELECT * FROM execution_steps WHERE id = ANY ($1::uuid[])', [
      ids,
    ]);
    return new Map(rows.map((r) => [r.id, r]));
  }

  /**
   * Opens the history rows of steps the executions have reached (one statement for the batch),
   * for those whose lease still holds: the map has no entry for an execution whose lease was lost.
   */
  async beginSteps(
    list: { row: ExecutionRow; step: { id: string; type: string } }[],
  ): Promise<Map<string, HistoryRow>> {
    const input = list.map(({ row, step }) => ({
      id: row.id,
      lease: row.lease_token,
      hid: randomUUID(),
      step_id: step.id,
      step_type: step.type,
    }));
    const { rows } = await this.pool.query<HistoryRow>(
      `WITH x AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb)
           AS x(id uuid, lease uuid, hid uuid, step_id uuid, step_type text)
       ), held AS (
         UPDATE executions e SET current_history_id = x.hid, updated_at = now()
         FROM x WHERE e.id = x.id AND e.lease_token = x.lease
         RETURNING e.id
       )
       INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit)
       SELECT x.hid, x.id, x.step_id, x.step_type, 'RUNNING',
         (SELECT count(*) + 1 FROM execution_steps s WHERE s.execution_id = x.id AND s.step_id = x.step_id)
       FROM x JOIN held ON held.id = x.id
       RETURNING *`,
      [JSON.stringify(input)],
    );
    const byExecution = new Map(rows.map((r) => [r.execution_id, r]));
    for (const { row } of list) {
      const h = byExecution.get(row.id);
      if (h) row.current_history_id = h.id;
    }
    return byExecution;
  }

  /**
   * Writes the steps' outcomes and the executions' next states, one statement for the batch: each
   * outcome lands together with its execution's new state, and only while this worker still holds
   * that execution's lease (a cancel or a resuming event clears it). Returns the new rows by id;
   * an execution whose lease was lost has none (and its outcome is not written).
   */
  async finishSteps(
    list: {
      row: ExecutionRow;
      outcome: StepOutcome;
      fresh?: FreshHistory;
      chain?: ChainedStep[];
      /** The next step to open now (one with effects outside this database), instead of by beginSteps. */
      open?: FreshHistory;
      /**
       * The execution has no history row yet (it is on its TRIGGER, which nothing leads into): the rows written
       * here, its first, are each step's first visit, without counting the earlier ones.
       */
      firstVisit?: boolean;
    }[],
  ): Promise<Map<string, ExecutionRow & { opened?: HistoryRow }>> {
    if (!list.length) return new Map();
    const input = list
      .map(({ row, outcome: o, fresh, chain = [], open, firstVisit }) => {
        const x = o.execution;
        const finished = !['RUNNING', 'WAITING'].includes(x.status);
        const chained = chain.map((c) => ({
          id: c.fresh.id,
          step_id: c.fresh.stepId,
          step_type: c.fresh.stepType,
          started_at: c.fresh.startedAt,
          status: c.history.status,
          output: c.history.output === undefined ? null : c.history.output,
          error: c.history.error ?? null,
        }));
        return {
          id: row.id,
          lease: row.lease_token,
          status: x.status,
          set_step: x.nextStepId !== undefined,
          next_step: x.nextStepId ?? null,
          due_at: finished ? null : (x.dueAt ?? null),
          wait_event: x.waitEvent ?? null,
          patch: x.contextPatch ?? {},
          error: x.error ?? null,
          finished,
          history_id: fresh ? null : row.current_history_id,
          fresh_id: fresh?.id ?? null,
          step_id: fresh?.stepId ?? null,
          step_type: fresh?.stepType ?? null,
          started_at: fresh?.startedAt ?? null,
          h_status: o.history.status,
          output: o.history.output === undefined ? null : o.history.output,
          h_error: o.history.error ?? null,
          chain: chained,
          // A chain that ends without moving on (a failed CONDITION) leaves the execution on its last step.
          last_id: chained.at(-1)?.id ?? null,
          last_step: chained.at(-1)?.step_id ?? null,
          open_id: open?.id ?? null,
          open_step: open?.stepId ?? null,
          open_type: open?.stepType ?? null,
          first_visit: firstVisit === true && fresh !== undefined,
        };
      })
      // The same lock order in every batch.
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    // Store migration 008, finish_steps_v2: this statement as a generic plan of a fixed shape (see there and 006).
    const { rows } = await this.pool.query<ExecutionRow>('SELECT * FROM finish_steps_v2($1::jsonb)', [
      JSON.stringify(input),
    ]);
    const given = new Map(list.map((l) => [l.row.id, l]));
    return new Map(
      rows.map((r) => {
        const { open_visit, open_started_at, ...changed } = r as Partial<ExecutionRow> & {
          id: string;
          open_visit: number | null;
          open_started_at: Date | null;
        };
        const { row: before, open } = given.get(changed.id)!;
        const row: ExecutionRow = { ...before, ...changed, context: changed.context ?? before.context };
        if (open_visit === null || !open) return [row.id, row];
        const opened: HistoryRow = {
          id: open.id,
          execution_id: row.id,
          step_id: open.stepId,
          step_type: open.stepType,
          visit: Number(open_visit),
          status: 'RUNNING',
          started_at: open_started_at ?? open.startedAt,
          finished_at: null,
          output: null,
          error: null,
        };
        return [row.id, { ...row, opened }];
      }),
    );
  }

  /**
   * A tracked event resumes the executions of its contact waiting for it (only events that happened
   * after the wait began): its data is merged into the context (and kept whole under `waitEvent`)
   * and the row is due now. Clearing
   * the lease token stops a worker that is handling the timeout at this moment from writing.
   */
  async resumeWaiting(projectId: string, contactId: string, name: string, at: Date, data: object): Promise<number> {
    const { rowCount } = await this.pool.query(
      `UPDATE executions SET resume = 'EVENT', wait_event = NULL, due_at = now(), lease_token = NULL,
         context = context || ($5::jsonb - 'event' - 'waitEvent')
           || jsonb_build_object('waitEvent', jsonb_build_object('name', $3::text, 'data', $5::jsonb)),
         updated_at = now()
       WHERE project_id = $1 AND contact_id = $2 AND wait_event = $3 AND status = 'WAITING' AND waiting_since <= $4`,
      [projectId, contactId, name, at, JSON.stringify(data)],
    );
    if (rowCount) await this.pool.query(`SELECT pg_notify('${DUE_CHANNEL}', '')`);
    return rowCount ?? 0;
  }

  /**
   * Keeps a tracked event when a WAIT_FOR_EVENT step of the project awaits its name (committed before
   * resumeWaiting runs, so an execution entering the wait meanwhile finds it in resumeFromRecorded).
   */
  async recordAwaited(projectId: string, contactId: string, name: string, at: Date, data: object): Promise<void> {
    await this.pool.query(
      `INSERT INTO awaited_events (project_id, contact_id, name, at, data)
       SELECT $1, $2, $3, $4, $5
       WHERE EXISTS (
         SELECT 1 FROM workflow_steps s JOIN workflows w ON w.id = s.workflow_id
         WHERE s.type = 'WAIT_FOR_EVENT' AND s.config->>'eventName' = $3 AND w.project_id = $1
       )`,
      [projectId, contactId, name, at, JSON.stringify(data)],
    );
  }

  /**
   * An execution that has just started waiting for an event: resumes it at once when the event was
   * tracked since it set off towards the wait (waiting_since: its trigger event, or the end of its last
   * DELAY or wait), e.g. while a step before the wait ran: before the wait row was committed,
   * resumeWaiting could not see it. Run after that commit; the wait_event condition makes this and
   * resumeWaiting exclusive. Strictly after: a workflow triggered by the event it then awaits is not
   * resumed by its own trigger.
   */
  async resumeFromRecorded(e: ExecutionRow): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE executions x SET resume = 'EVENT', wait_event = NULL, due_at = now(), lease_token = NULL,
         context = x.context || (ev.data - 'event' - 'waitEvent')
           || jsonb_build_object('waitEvent', jsonb_build_object('name', ev.name, 'data', ev.data)),
         updated_at = now()
       FROM (
         SELECT name, data FROM awaited_events
         WHERE project_id = $2 AND contact_id = $3 AND name = $4 AND at > $5 ORDER BY at LIMIT 1
       ) ev
       WHERE x.id = $1 AND x.status = 'WAITING' AND x.wait_event = $4`,
      [e.id, e.project_id, e.contact_id, e.wait_event, e.waiting_since],
    );
    if (rowCount) await this.pool.query(`SELECT pg_notify('${DUE_CHANNEL}', '')`);
    return Boolean(rowCount);
  }

  /**
   * How many steps each execution has run since it last left a DELAY or WAIT_FOR_EVENT step (or since it started):
   * its history rows started after the last such row. Asked only of executions still running after a claim's
   * STEPS_PER_CLAIM steps (engine.ts), never per step. Each count walks execution_steps_execution backwards from
   * the newest row to the last wait, so it reads about as many rows as it counts.
   */
  async busySteps(ids: string[]): Promise<Map<string, number>> {
    if (!ids.length) return new Map();
    const { rows } = await this.pool.query<{ id: string; n: number }>(
      `SELECT x.id, (
         SELECT count(*)::int FROM execution_steps s
         WHERE s.execution_id = x.id AND s.started_at > coalesce((
           SELECT w.started_at FROM execution_steps w
           WHERE w.execution_id = x.id AND w.step_type IN ('DELAY', 'WAIT_FOR_EVENT')
           ORDER BY w.started_at DESC LIMIT 1), '-infinity')
       ) AS n
       FROM unnest($1::uuid[]) AS x(id)`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, r.n]));
  }

  /** Forgets awaited events older than `ms` (a wait only looks back to its step's start). */
  async pruneAwaited(ms: number): Promise<void> {
    await this.pool.query(`DELETE FROM awaited_events WHERE received_at < now() - $1 * interval '1 millisecond'`, [ms]);
  }

  /** Leaves claimed executions for a later claim (a dependency was down), still under this worker's lease. */
  async retryLater(list: ExecutionRow[], ms: number): Promise<void> {
    if (!list.length) return;
    await this.pool.query(
      `UPDATE executions e SET due_at = now() + $2 * interval '1 millisecond', updated_at = now()
       FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, lease uuid)
       WHERE e.id = x.id AND e.lease_token = x.lease`,
      [JSON.stringify(list.map((e) => ({ id: e.id, lease: e.lease_token }))), ms],
    );
  }

  async get(db: Queryable, workflowId: string, id: string): Promise<ExecutionRow | null> {
    const { rows } = await db.query<ExecutionRow>('SELECT * FROM executions WHERE workflow_id = $1 AND id = $2', [
      workflowId,
      id,
    ]);
    return rows[0] ?? null;
  }

  async steps(id: string): Promise<HistoryRow[]> {
    const { rows } = await this.pool.query<HistoryRow>(
      'SELECT * FROM execution_steps WHERE execution_id = $1 ORDER BY started_at, id',
      [id],
    );
    return rows;
  }

  async list(
    workflowId: string,
    status: string | null,
    limit: number,
    offset: number,
  ): Promise<{ rows: ExecutionRow[]; total: number }> {
    const where = 'workflow_id = $1 AND ($2::text IS NULL OR status = $2)';
    const [rows, count] = await Promise.all([
      this.pool.query<ExecutionRow>(
        `SELECT * FROM executions WHERE ${where} ORDER BY started_at DESC, id DESC LIMIT $3 OFFSET $4`,
        [workflowId, status, limit, offset],
      ),
      this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM executions WHERE ${where}`, [workflowId, status]),
    ]);
    return { rows: rows.rows, total: Number(count.rows[0].n) };
  }

  async hasActive(db: Queryable, workflowId: string): Promise<boolean> {
    const { rows } = await db.query(
      `SELECT 1 FROM executions WHERE workflow_id = $1 AND status IN ('RUNNING', 'WAITING') LIMIT 1`,
      [workflowId],
    );
    return rows.length > 0;
  }

  /** Cancels active executions (one, or all of the workflow); their open history rows become SKIPPED. */
  async cancel(db: Queryable, workflowId: string, executionId: string | null): Promise<ExecutionRow[]> {
    const { rows } = await db.query<ExecutionRow>(
      `UPDATE executions SET status = 'CANCELLED', due_at = NULL, wait_event = NULL, lease_token = NULL,
         finished_at = now(), updated_at = now()
       WHERE workflow_id = $1 AND ($2::uuid IS NULL OR id = $2) AND status IN ('RUNNING', 'WAITING')
       RETURNING *`,
      [workflowId, executionId],
    );
    if (rows.length) {
      await db.query(
        `UPDATE execution_steps SET status = 'SKIPPED', finished_at = now()
         WHERE id = ANY ($1::uuid[]) AND finished_at IS NULL`,
        [rows.map((r) => r.current_history_id).filter(Boolean)],
      );
    }
    return rows;
  }
}
