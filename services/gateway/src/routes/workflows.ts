import { fromJson, toJson, type DescMessage, type JsonValue, type MessageShape } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import {
  ExecutionSchema,
  StepSchema,
  TransitionSchema,
  WorkflowSchema,
  type WorkflowsService,
} from '@svc/proto/svc/workflows/v1/workflows_pb';
import { Router, type Request } from 'express';
import type { KeyGuards } from '../http/guards.js';
import { objectBody } from '../http/body.js';
import { boolParam, rangeParam, stringParam } from '../http/query.js';

const MAX_PAGE = 1_000_000;
const MAX_PAGE_SIZE = 100;

/** The JSON body as sent (an object): the workflows service validates it (422 with field paths). */
const bodyValue = (req: Request) => fromJson(ValueSchema, objectBody(req.body) as JsonValue);

/** proto3 JSON of a workflow record: camelCase, RFC 3339 times, every scalar present. */
const json = <D extends DescMessage>(schema: D, m: MessageShape<D> | undefined) =>
  m ? toJson(schema, m, { alwaysEmitImplicit: true }) : null;

function pageParams(q: Record<string, unknown>) {
  const page = rangeParam(q, 'page', { def: 1, min: 1, max: MAX_PAGE });
  const size = rangeParam(q, 'pageSize', { def: 20, min: 1, max: Number.MAX_SAFE_INTEGER });
  return { page, pageSize: Math.min(size, MAX_PAGE_SIZE) };
}

const paged = (data: unknown[], total: bigint, page: number, pageSize: number) => ({
  data,
  total: Number(total),
  page,
  pageSize,
  totalPages: Math.ceil(Number(total) / pageSize),
});

export function workflowsRouter(workflows: Client<typeof WorkflowsService>, guards: KeyGuards): Router {
  const r = Router();
  const secret = guards.secret;
  const id = (req: Request) => String(req.params.id);
  const base = (req: Request) => ({ projectId: req.projectId, workflowId: id(req) });

  r.get('/workflows', secret, async (req, res) => {
    const { page, pageSize } = pageParams(req.query);
    const out = await workflows.listWorkflows({ projectId: req.projectId, page, pageSize });
    res.json(
      paged(
        out.workflows.map((w) => json(WorkflowSchema, w)),
        out.total,
        page,
        pageSize,
      ),
    );
  });

  r.get('/workflows/fields', secret, async (req, res) => {
    const out = await workflows.listWorkflowFields({
      projectId: req.projectId,
      workflowId: stringParam(req.query, 'workflowId') ?? '',
    });
    res.json(out.fields.map((f) => ({ field: f.field, type: f.type, source: f.source })));
  });

  r.get('/workflows/webhook-secret', secret, async (req, res) => {
    res.json({ secret: (await workflows.getWebhookSecret({ projectId: req.projectId })).secret });
  });

  r.post('/workflows', secret, async (req, res) => {
    const out = await workflows.createWorkflow({ projectId: req.projectId, body: bodyValue(req) });
    res.status(201).json(json(WorkflowSchema, out.workflow));
  });

  r.get('/workflows/:id', secret, async (req, res) => {
    res.json(json(WorkflowSchema, (await workflows.getWorkflow({ projectId: req.projectId, id: id(req) })).workflow));
  });

  r.patch('/workflows/:id', secret, async (req, res) => {
    const out = await workflows.updateWorkflow({ projectId: req.projectId, id: id(req), body: bodyValue(req) });
    res.json(json(WorkflowSchema, out.workflow));
  });

  r.delete('/workflows/:id', secret, async (req, res) => {
    await workflows.deleteWorkflow({ projectId: req.projectId, id: id(req) });
    res.status(204).end();
  });

  r.post('/workflows/:id/steps', secret, async (req, res) => {
    const out = await workflows.addStep({ ...base(req), body: bodyValue(req) });
    res.status(201).json(json(StepSchema, out.step));
  });

  r.patch('/workflows/:id/steps/:stepId', secret, async (req, res) => {
    const out = await workflows.updateStep({ ...base(req), stepId: String(req.params.stepId), body: bodyValue(req) });
    res.json(json(StepSchema, out.step));
  });

  r.delete('/workflows/:id/steps/:stepId', secret, async (req, res) => {
    const splice = boolParam(req.query, 'splice') ?? false;
    await workflows.deleteStep({ ...base(req), stepId: String(req.params.stepId), splice });
    res.status(204).end();
  });

  r.post('/workflows/:id/transitions', secret, async (req, res) => {
    const out = await workflows.addTransition({ ...base(req), body: bodyValue(req) });
    res.status(201).json(json(TransitionSchema, out.transition));
  });

  r.delete('/workflows/:id/transitions/:transitionId', secret, async (req, res) => {
    await workflows.deleteTransition({ ...base(req), transitionId: String(req.params.transitionId) });
    res.status(204).end();
  });

  r.post('/workflows/:id/executions/cancel-all', secret, async (req, res) => {
    const out = await workflows.cancelAllExecutions(base(req));
    res.json({ cancelled: Number(out.cancelled) });
  });

  r.post('/workflows/:id/executions', secret, async (req, res) => {
    const out = await workflows.startExecution({ ...base(req), body: bodyValue(req) });
    res.status(201).json(json(ExecutionSchema, out.execution));
  });

  r.get('/workflows/:id/executions', secret, async (req, res) => {
    const { page, pageSize } = pageParams(req.query);
    const status = stringParam(req.query, 'status') ?? '';
    const out = await workflows.listExecutions({ ...base(req), status, page, pageSize });
    res.json(
      paged(
        out.executions.map((e) => json(ExecutionSchema, e)),
        out.total,
        page,
        pageSize,
      ),
    );
  });

  r.get('/workflows/:id/executions/:executionId', secret, async (req, res) => {
    const out = await workflows.getExecution({ ...base(req), executionId: String(req.params.executionId) });
    res.json(json(ExecutionSchema, out.execution));
  });

  r.delete('/workflows/:id/executions/:executionId', secret, async (req, res) => {
    const out = await workflows.cancelExecution({ ...base(req), executionId: String(req.params.executionId) });
    res.json(json(ExecutionSchema, out.execution));
  });

  return r;
}
