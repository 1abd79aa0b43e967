import { create, fromJson, toJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { timestampFromDate, ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter } from '@connectrpc/connect';
import {
  ExecutionSchema,
  ExecutionStepSchema,
  StepSchema,
  TransitionSchema,
  WorkflowSchema,
  WorkflowsService,
} from '@svc/proto/svc/workflows/v1/workflows_pb';
import type { Executions } from './domain/executions.js';
import { segmentOfEvent, type WorkflowView, type Workflows } from './domain/workflows.js';
import type { ExecutionRow, HistoryRow } from './store/executions-store.js';
import type { StepRow, TransitionRow, WorkflowRow, WorkflowsStore } from './store/workflows-store.js';
import { findWorkflowsUsing } from './domain/usage.js';
import { isUuid } from '@svc/lib/ids';

const MAX_PAGE_SIZE = 100;
const body = (v?: Value): unknown => (v === undefined ? {} : toJson(ValueSchema, v));
const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);
const page = (p: number, size: number) => ({ page: Math.max(1, p || 1), size: Math.min(MAX_PAGE_SIZE, size || 20) });

const stepPb = (s: StepRow) =>
  create(StepSchema, {
    id: s.id,
    workflowId: s.workflow_id,
    type: s.type,
    name: s.name,
    config: s.config as JsonObject,
    createdAt: ts(s.created_at),
    updatedAt: ts(s.updated_at),
  });

const transitionPb = (t: TransitionRow) =>
  create(TransitionSchema, {
    id: t.id,
    workflowId: t.workflow_id,
    fromStepId: t.from_step_id,
    toStepId: t.to_step_id,
    branch: t.branch ?? undefined,
    waitOutcome: t.wait_outcome ?? undefined,
    createdAt: ts(t.created_at),
  });

const workflowPb = (w: WorkflowRow | WorkflowView) =>
  create(WorkflowSchema, {
    id: w.id,
    projectId: w.project_id,
    name: w.name,
    description: w.description ?? undefined,
    triggerType: w.trigger_type,
    triggerConfig: w.trigger_config as JsonObject,
    enabled: w.enabled,
    allowReentry: w.allow_reentry,
    createdAt: ts(w.created_at),
    updatedAt: ts(w.updated_at),
    steps: 'steps' in w ? w.steps.map(stepPb) : [],
    transitions: 'transitions' in w ? w.transitions.map(transitionPb) : [],
  });

const historyPb = (h: HistoryRow) =>
  create(ExecutionStepSchema, {
    id: h.id,
    stepId: h.step_id,
    stepType: h.step_type,
    status: h.status,
    startedAt: ts(h.started_at),
    finishedAt: ts(h.finished_at),
    output: h.output === null || h.output === undefined ? undefined : fromJson(ValueSchema, h.output as JsonValue),
    error: h.error ?? undefined,
  });

const executionPb = (e: ExecutionRow, steps: HistoryRow[] = []) =>
  create(ExecutionSchema, {
    id: e.id,
    workflowId: e.workflow_id,
    contactId: e.contact_id,
    status: e.status,
    context: e.context as JsonObject,
    currentStepId: e.current_step_id ?? undefined,
    error: e.error ?? undefined,
    // A RUNNING row's due_at is a worker's lease, not a time the client cares about.
    dueAt: e.status === 'WAITING' ? ts(e.due_at) : undefined,
    startedAt: ts(e.started_at),
    finishedAt: ts(e.finished_at),
    updatedAt: ts(e.updated_at),
    steps: steps.map(historyPb),
    chainDepth: e.chain_depth,
  });

export function workflowsRoutes(workflows: Workflows, executions: Executions, store: WorkflowsStore) {
  return (router: ConnectRouter) =>
    router.service(WorkflowsService, {
      async listWorkflows(req) {
        const p = page(req.page, req.pageSize);
        const r = await workflows.list(req.projectId, p.page, p.size);
        return { workflows: r.rows.map(workflowPb), total: BigInt(r.total) };
      },
      async createWorkflow(req) {
        return { workflow: workflowPb(await workflows.create(req.projectId, body(req.body))) };
      },
      async getWorkflow(req) {
        return { workflow: workflowPb(await workflows.get(req.projectId, req.id)) };
      },
      async updateWorkflow(req) {
        return { workflow: workflowPb(await workflows.update(req.projectId, req.id, body(req.body))) };
      },
      async deleteWorkflow(req) {
        await workflows.remove(req.projectId, req.id);
        return {};
      },
      async listWorkflowFields(req) {
        return { fields: await workflows.fields(req.projectId, req.workflowId || undefined) };
      },
      async getWebhookSecret(req) {
        return { secret: await workflows.webhookSecret(req.projectId) };
      },
      async addStep(req) {
        return { step: stepPb(await workflows.addStep(req.projectId, req.workflowId, body(req.body))) };
      },
      async updateStep(req) {
        return { step: stepPb(await workflows.updateStep(req.projectId, req.workflowId, req.stepId, body(req.body))) };
      },
      async deleteStep(req) {
        await workflows.deleteStep(req.projectId, req.workflowId, req.stepId, req.splice);
        return {};
      },
      async addTransition(req) {
        const t = await workflows.addTransition(req.projectId, req.workflowId, body(req.body));
        return { transition: transitionPb(t) };
      },
      async deleteTransition(req) {
        await workflows.deleteTransition(req.projectId, req.workflowId, req.transitionId);
        return {};
      },
      async startExecution(req) {
        return { execution: executionPb(await executions.start(req.projectId, req.workflowId, body(req.body))) };
      },
      async listExecutions(req) {
        const p = page(req.page, req.pageSize);
        const r = await executions.list(req.projectId, req.workflowId, req.status, p.page, p.size);
        return { executions: r.rows.map((e) => executionPb(e)), total: BigInt(r.total) };
      },
      async getExecution(req) {
        const r = await executions.get(req.projectId, req.workflowId, req.executionId);
        return { execution: executionPb(r.row, r.steps) };
      },
      async cancelExecution(req) {
        return { execution: executionPb(await executions.cancel(req.projectId, req.workflowId, req.executionId)) };
      },
      async cancelAllExecutions(req) {
        return { cancelled: BigInt(await executions.cancelAll(req.projectId, req.workflowId)) };
      },
      async listUpcomingExecutions(req) {
        if (!isUuid(req.projectId)) return { executions: [] };
        const rows = await store.upcoming(req.projectId, Math.min(100, Math.max(1, req.limit || 20)));
        return {
          executions: rows.map((r) => ({
            id: r.id,
            workflowId: r.workflow_id,
            workflowName: r.workflow_name,
            contactId: r.contact_id,
            stepId: r.step_id ?? '',
            stepName: r.step_name ?? '',
            stepType: r.step_type ?? '',
            dueAt: ts(r.due_at),
          })),
        };
      },
      async findWorkflowsUsing(req) {
        const ref = req.templateId
          ? { templateId: req.templateId }
          : req.eventName
            ? { eventName: req.eventName }
            : req.field
              ? { field: req.field }
              : null;
        // A template DELETE asks with `settled`: step writes naming the template that are under way are read once done.
        if (req.settled && req.templateId && isUuid(req.templateId)) await store.settleTemplateWrites(req.templateId);
        // A segment DELETE asks so for its events: workflow writes naming them under way are read once done.
        if (req.settled && req.eventName && segmentOfEvent(req.eventName) && isUuid(req.projectId))
          await store.settleEventWrites(req.projectId, req.eventName);
        return { usages: ref ? await findWorkflowsUsing(store, req.projectId, ref) : [] };
      },
    });
}
