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
   * Claims due executions (index executions_due; SKIP LOCKED lets replicas share the work). The
   * claim pushes due_at out by the lease and sets a new lease token: a worker that dies leaves the
   * row due again after the lease, and a worker whose lease was taken over cannot write.
   */
  async claim(limit: number, leaseMs: number): Promise<ExecutionRow[]> {
    const { rows } = await this.pool.query<ExecutionRow>(
      `UPDATE executions e SET due_at = now() + $2 * interval '1 millisecond', lease_token = gen_random_uuid()
       FROM (
         SELECT id FROM executions WHERE due_at <= now() ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED
       ) due
       WHERE e.id = due.id
       RETURNING e.*`,
      [limit, leaseMs],
    );
    return rows;
  }

  async history(db: Queryable, id: string): Promise<HistoryRow | null> {
    const { rows } = await db.query<HistoryRow>('SELECT * FROM execution_steps WHERE id = $1', [id]);
    return rows[0] ?? null;
  }

  /** Opens the history row of a step the execution has reached; false if the lease was lost. */
  async beginStep(e: ExecutionRow, step: { id: string; type: string }): Promise<HistoryRow | null> {
    const id = randomUUID();
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const { rowCount } = await client.query(
        'UPDATE executions SET current_history_id = $2, updated_at = now() WHERE id = $1 AND lease_token = $3',
        [e.id, id, e.lease_token],
      );
      if (!rowCount) {
        await client.query('ROLLBACK');
        return null;
      }
      const { rows } = await client.query<HistoryRow>(
        `INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit)
         VALUES ($1, $2, $3, $4, 'RUNNING',
           (SELECT count(*) + 1 FROM execution_steps WHERE execution_id = $2 AND step_id = $3))
         RETURNING *`,
        [id, e.id, step.id, step.type],
      );
      await client.query('COMMIT');
      e.current_history_id = id;
      return rows[0];
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Writes a step's outcome and the execution's next state in one transaction, only while this
   * worker still holds the lease (a cancel or a resuming event clears it). Returns the new row.
   */
  async finishStep(
    e: ExecutionRow,
    o: StepOutcome,
    fresh?: { id: string; stepId: string; stepType: string; startedAt: Date },
  ): Promise<ExecutionRow | null> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const x = o.execution;
      const finished = !['RUNNING', 'WAITING'].includes(x.status);
      const { rows } = await client.query<ExecutionRow>(
        `UPDATE executions SET
           status = $3,
           current_step_id = CASE WHEN $4 THEN $5::uuid ELSE current_step_id END,
           current_history_id = CASE WHEN $4 THEN NULL ELSE COALESCE($11::uuid, current_history_id) END,
           due_at = $6,
           wait_event = $7,
           -- A wait for an event takes the events since the execution last set off (see resumeFromRecorded).
           waiting_since = CASE WHEN $7::text IS NULL THEN NULL
             WHEN status = 'WAITING' THEN now() ELSE COALESCE(since, now()) END,
           since = CASE WHEN status = 'WAITING' AND $3 <> 'WAITING' THEN now() ELSE since END,
           resume = NULL,
           context = context || $8::jsonb,
           error = COALESCE($9, error),
           finished_at = CASE WHEN $10 THEN now() END,
           lease_token = CASE WHEN $10 THEN NULL ELSE lease_token END,
           updated_at = now()
         WHERE id = $1 AND lease_token = $2
         RETURNING *`,
        [
          e.id,
          e.lease_token,
          x.status,
          x.nextStepId !== undefined,
          x.nextStepId ?? null,
          finished ? null : (x.dueAt ?? null),
          x.waitEvent ?? null,
          JSON.stringify(x.contextPatch ?? {}),
          x.error ?? null,
          finished,
          fresh?.id ?? null,
        ],
      );
      if (!rows[0]) {
        await client.query('ROLLBACK');
        return null;
      }
      const output = o.history.output === undefined ? null : JSON.stringify(o.history.output);
      if (fresh) {
        // A step without effects outside this database: its history row is written here, not by beginStep.
        await client.query(
          `INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit, started_at, output, error,
             finished_at)
           VALUES ($1, $2, $3, $4, $5,
             (SELECT count(*) + 1 FROM execution_steps WHERE execution_id = $2 AND step_id = $3), $6, $7, $8,
             CASE WHEN $5 = 'WAITING' THEN NULL ELSE now() END)`,
          [
            fresh.id,
            e.id,
            fresh.stepId,
            fresh.stepType,
            o.history.status,
            fresh.startedAt,
            output,
            o.history.error ?? null,
          ],
        );
      } else {
        await client.query(
          `UPDATE execution_steps SET status = $2, output = $3, error = $4,
             finished_at = CASE WHEN $2 = 'WAITING' THEN NULL ELSE now() END
           WHERE id = $1`,
          [e.current_history_id, o.history.status, output, o.history.error ?? null],
        );
      }
      await client.query('COMMIT');
      return rows[0];
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
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

  /** Forgets awaited events older than `ms` (a wait only looks back to its step's start). */
  async pruneAwaited(ms: number): Promise<void> {
    await this.pool.query(`DELETE FROM awaited_events WHERE received_at < now() - $1 * interval '1 millisecond'`, [ms]);
  }

  /** Leaves a claimed execution for a later claim (a dependency was down), still under this worker's lease. */
  async retryLater(e: ExecutionRow, ms: number): Promise<void> {
    await this.pool.query(
      `UPDATE executions SET due_at = now() + $3 * interval '1 millisecond', updated_at = now()
       WHERE id = $1 AND lease_token = $2`,
      [e.id, e.lease_token, ms],
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
