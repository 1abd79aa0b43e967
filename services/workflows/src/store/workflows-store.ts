import { withTransaction, type Pool, type Queryable } from '@svc/lib/db';
import type { StepType } from '../domain/workflow-input.js';

export interface WorkflowRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  trigger_type: 'EVENT' | 'MANUAL';
  trigger_config: { eventName?: string };
  enabled: boolean;
  allow_reentry: boolean;
  created_at: Date;
  updated_at: Date;
}
export interface StepRow {
  id: string;
  workflow_id: string;
  type: StepType;
  name: string;
  config: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}
export interface TransitionRow {
  id: string;
  workflow_id: string;
  from_step_id: string;
  to_step_id: string;
  branch: 'yes' | 'no' | null;
  wait_outcome: 'EVENT' | 'TIMEOUT' | null;
  created_at: Date;
}
export interface UpcomingRow {
  id: string;
  workflow_id: string;
  workflow_name: string;
  contact_id: string;
  step_id: string | null;
  step_name: string | null;
  step_type: string | null;
  due_at: Date;
}

export interface WorkflowPatch {
  name?: string;
  description?: string | null;
  triggerType?: 'EVENT' | 'MANUAL';
  triggerConfig?: { eventName?: string };
  enabled?: boolean;
  allowReentry?: boolean;
}

/** The advisory lock key of the step writes naming a template (shared by them, taken whole by a template DELETE). */
const templateKey = (templateId: string) => `template:${templateId}`;
/** As `templateKey`, for the workflow writes naming a project's event (a segment's entry or exit). */
const eventKey = (projectId: string, eventName: string) => `event:${projectId}:${eventName}`;

export class WorkflowsStore {
  constructor(readonly pool: Pool) {}

  /** Marks `tx` as a step write naming the template, until it ends (`settleTemplateWrites` waits for it). */
  async holdTemplate(tx: Queryable, templateId: string): Promise<void> {
    await tx.query('SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))', [templateKey(templateId)]);
  }

  /** Waits for the step writes naming the template that are under way (`holdTemplate`) to commit or fail. */
  async settleTemplateWrites(templateId: string): Promise<void> {
    await this.pool.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [templateKey(templateId)]);
  }

  /** Marks `tx` as a workflow write naming the event, until it ends (`settleEventWrites` waits for it). */
  async holdEvent(tx: Queryable, projectId: string, eventName: string): Promise<void> {
    await tx.query('SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))', [eventKey(projectId, eventName)]);
  }

  /** Waits for the workflow writes naming the event that are under way (`holdEvent`) to commit or fail. */
  async settleEventWrites(projectId: string, eventName: string): Promise<void> {
    await this.pool.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [eventKey(projectId, eventName)]);
  }

  async list(projectId: string, limit: number, offset: number): Promise<{ rows: WorkflowRow[]; total: number }> {
    const [rows, count] = await Promise.all([
      this.pool.query<WorkflowRow>(
        'SELECT * FROM workflows WHERE project_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3',
        [projectId, limit, offset],
      ),
      this.pool.query<{ n: string }>('SELECT count(*) AS n FROM workflows WHERE project_id = $1', [projectId]),
    ]);
    return { rows: rows.rows, total: Number(count.rows[0].n) };
  }

  async get(db: Queryable, projectId: string, id: string, lock = false): Promise<WorkflowRow | null> {
    const { rows } = await db.query<WorkflowRow>(
      `SELECT * FROM workflows WHERE project_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
      [projectId, id],
    );
    return rows[0] ?? null;
  }

  async insert(db: Queryable, w: Omit<WorkflowRow, 'created_at' | 'updated_at' | 'enabled'>): Promise<WorkflowRow> {
    const { rows } = await db.query<WorkflowRow>(
      `INSERT INTO workflows (id, project_id, name, description, trigger_type, trigger_config, allow_reentry)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [w.id, w.project_id, w.name, w.description, w.trigger_type, JSON.stringify(w.trigger_config), w.allow_reentry],
    );
    return rows[0];
  }

  async update(db: Queryable, id: string, p: WorkflowPatch): Promise<WorkflowRow> {
    const { rows } = await db.query<WorkflowRow>(
      `UPDATE workflows SET
         name = COALESCE($2, name),
         description = CASE WHEN $3 THEN $4 ELSE description END,
         trigger_type = COALESCE($5, trigger_type),
         trigger_config = COALESCE($6::jsonb, trigger_config),
         enabled = COALESCE($7, enabled),
         allow_reentry = COALESCE($8, allow_reentry),
         updated_at = now()
       WHERE id = $1 RETURNING *`,
      [
        id,
        p.name ?? null,
        p.description !== undefined,
        p.description ?? null,
        p.triggerType ?? null,
        p.triggerConfig ? JSON.stringify(p.triggerConfig) : null,
        p.enabled ?? null,
        p.allowReentry ?? null,
      ],
    );
    return rows[0];
  }

  async remove(db: Queryable, id: string): Promise<void> {
    await db.query('DELETE FROM workflows WHERE id = $1', [id]);
  }

  async touch(db: Queryable, id: string): Promise<void> {
    await db.query('UPDATE workflows SET updated_at = now() WHERE id = $1', [id]);
  }

  async steps(db: Queryable, workflowId: string): Promise<StepRow[]> {
    const { rows } = await db.query<StepRow>(
      'SELECT * FROM workflow_steps WHERE workflow_id = $1 ORDER BY created_at, id',
      [workflowId],
    );
    return rows;
  }

  async transitions(db: Queryable, workflowId: string): Promise<TransitionRow[]> {
    const { rows } = await db.query<TransitionRow>(
      'SELECT * FROM workflow_transitions WHERE workflow_id = $1 ORDER BY created_at, id',
      [workflowId],
    );
    return rows;
  }

  async insertStep(db: Queryable, s: Omit<StepRow, 'created_at' | 'updated_at'>): Promise<StepRow> {
    const { rows } = await db.query<StepRow>(
      `INSERT INTO workflow_steps (id, workflow_id, type, name, config) VALUES ($1, $2, $3, $4, $5) RETURNING *`,
      [s.id, s.workflow_id, s.type, s.name, JSON.stringify(s.config)],
    );
    return rows[0];
  }

  async updateStep(db: Queryable, id: string, name?: string, config?: Record<string, unknown>): Promise<StepRow> {
    const { rows } = await db.query<StepRow>(
      `UPDATE workflow_steps SET name = COALESCE($2, name), config = COALESCE($3::jsonb, config), updated_at = now()
       WHERE id = $1 RETURNING *`,
      [id, name ?? null, config ? JSON.stringify(config) : null],
    );
    return rows[0];
  }

  async removeStep(db: Queryable, id: string): Promise<void> {
    await db.query('DELETE FROM workflow_steps WHERE id = $1', [id]);
  }

  async insertTransition(db: Queryable, t: Omit<TransitionRow, 'created_at'>): Promise<TransitionRow> {
    const { rows } = await db.query<TransitionRow>(
      `INSERT INTO workflow_transitions (id, workflow_id, from_step_id, to_step_id, branch, wait_outcome)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
      [t.id, t.workflow_id, t.from_step_id, t.to_step_id, t.branch, t.wait_outcome],
    );
    return rows[0];
  }

  async removeTransition(db: Queryable, workflowId: string, id: string): Promise<boolean> {
    const { rowCount } = await db.query('DELETE FROM workflow_transitions WHERE workflow_id = $1 AND id = $2', [
      workflowId,
      id,
    ]);
    return !!rowCount;
  }

  /** The enabled EVENT workflows an event name starts (index workflows_trigger). */
  /** Whether an event name triggers an enabled workflow, and whether a WAIT_FOR_EVENT step awaits it. */
  async interest(projectId: string, eventName: string): Promise<{ triggered: boolean; awaited: boolean }> {
    const { rows } = await this.pool.query<{ triggered: boolean; awaited: boolean }>(
      `SELECT
         EXISTS (SELECT 1 FROM workflows
           WHERE project_id = $1 AND enabled AND trigger_type = 'EVENT' AND trigger_config->>'eventName' = $2
         ) AS triggered,
         EXISTS (SELECT 1 FROM workflow_steps s JOIN workflows w ON w.id = s.workflow_id
           WHERE s.type = 'WAIT_FOR_EVENT' AND s.config->>'eventName' = $2 AND w.project_id = $1
         ) AS awaited`,
      [projectId, eventName],
    );
    return rows[0];
  }

  async recordEventFields(projectId: string, eventName: string, fields: { field: string; type: string }[]) {
    if (!fields.length) return;
    await this.pool.query(
      `INSERT INTO event_fields (project_id, event_name, field, type)
       SELECT $1, $2, f, t FROM unnest($3::text[], $4::text[]) AS x (f, t)
       ON CONFLICT DO NOTHING`,
      [projectId, eventName, fields.map((f) => f.field), fields.map((f) => f.type)],
    );
  }

  async eventFields(projectId: string, eventNames: string[]): Promise<{ field: string; type: string }[]> {
    const { rows } = await this.pool.query<{ field: string; type: string }>(
      `SELECT DISTINCT ON (field) field, type FROM event_fields
       WHERE project_id = $1 AND event_name = ANY ($2) ORDER BY field`,
      [projectId, eventNames],
    );
    return rows;
  }

  async eventNames(projectId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ name: string }>(
      `SELECT DISTINCT trigger_config->>'eventName' AS name FROM workflows
       WHERE project_id = $1 AND trigger_config->>'eventName' IS NOT NULL`,
      [projectId],
    );
    return rows.map((r) => r.name);
  }

  /** The project's webhook signing secret, created on first use (concurrent first uses agree). */
  async webhookSecret(projectId: string, fresh: string): Promise<string> {
    const { rows } = await this.pool.query<{ webhook_secret: string }>(
      `WITH ins AS (
         INSERT INTO project_secrets (project_id, webhook_secret) VALUES ($1, $2)
         ON CONFLICT (project_id) DO NOTHING RETURNING webhook_secret
       )
       SELECT webhook_secret FROM ins UNION ALL SELECT webhook_secret FROM project_secrets WHERE project_id = $1`,
      [projectId, fresh],
    );
    return rows[0].webhook_secret;
  }

  /** Waiting executions of a project by due time (index executions_upcoming). */
  async upcoming(projectId: string, limit: number): Promise<UpcomingRow[]> {
    const { rows } = await this.pool.query<UpcomingRow>(
      `SELECT e.id, e.workflow_id, w.name AS workflow_name, e.contact_id, e.current_step_id AS step_id,
         s.name AS step_name, s.type AS step_type, e.due_at
       FROM executions e JOIN workflows w ON w.id = e.workflow_id
       LEFT JOIN workflow_steps s ON s.id = e.current_step_id
       WHERE e.project_id = $1 AND e.status = 'WAITING' AND e.due_at IS NOT NULL
       ORDER BY e.due_at, e.id LIMIT $2`,
      [projectId, limit],
    );
    return rows;
  }

  /**
   * Steps that may reference a template, an event name or a field: SEND_EMAIL with the template id,
   * triggers and WAIT_FOR_EVENT steps with the event name, every CONDITION step (the caller reads its tree).
   */
  async referencingSteps(
    projectId: string,
    ref: { templateId?: string; eventName?: string; conditions?: boolean },
  ): Promise<(StepRow & { workflow_name: string })[]> {
    const { rows } = await this.pool.query<StepRow & { workflow_name: string }>(
      `SELECT s.*, w.name AS workflow_name FROM workflow_steps s JOIN workflows w ON w.id = s.workflow_id
       WHERE w.project_id = $1 AND (
         (s.type = 'SEND_EMAIL' AND s.config->>'templateId' = $2)
         OR (s.type = 'WAIT_FOR_EVENT' AND s.config->>'eventName' = $3)
         OR (s.type = 'TRIGGER' AND w.trigger_type = 'EVENT' AND w.trigger_config->>'eventName' = $3)
         OR (s.type = 'CONDITION' AND $4))
       ORDER BY w.created_at, w.id, s.created_at, s.id`,
      [projectId, ref.templateId ?? null, ref.eventName ?? null, ref.conditions ?? false],
    );
    return rows;
  }

  /** Every row of the project (executions, steps and timers go with their workflow), in one transaction. */
  /**
   * Runs `send` while holding the workflow's row FOR KEY SHARE, or answers null without running it when the workflow
   * is gone. A project wipe's DELETE waits for the mail being queued: messaging, wiped after workflows, then removes
   * it, and no step queues mail of a wiped project afterwards. Edits are refused while executions run anyway.
   */
  async whileExists<T>(workflowId: string, send: () => Promise<T>): Promise<T | null> {
    return withTransaction(this.pool, async (tx) => {
      const { rowCount } = await tx.query('SELECT 1 FROM workflows WHERE id = $1 FOR KEY SHARE', [workflowId]);
      return rowCount === 1 ? send() : null;
    });
  }

  async removeProject(projectId: string): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      for (const table of ['workflows', 'executions', 'awaited_events', 'project_secrets', 'event_fields']) {
        await tx.query(`DELETE FROM ${table} WHERE project_id = $1`, [projectId]);
      }
    });
  }
}
