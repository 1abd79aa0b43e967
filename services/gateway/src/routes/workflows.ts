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
import type { Router, Request } from 'express';
import type { KeyGuards } from '../http/guards.js';
import { objectBody } from '../http/body.js';
import { boolParam, rangeParam, stringParam } from '../http/query.js';
import { z } from 'zod';
import { ApiRouter, id as uuid, stringQuery } from '../http/api.js';
import { protoJsonSchema } from '../http/proto-schema.js';

// Answers are the workflows service's messages in proto3 JSON; their schemas come from the .proto descriptors.
const Workflow = protoJsonSchema(WorkflowSchema).openapi('Workflow');
const Step = protoJsonSchema(StepSchema).openapi('WorkflowStep');
const Transition = protoJsonSchema(TransitionSchema).openapi('WorkflowTransition');
const Execution = protoJsonSchema(ExecutionSchema).openapi('WorkflowExecution');
const paging = {
  total: z.number().int(),
  page: z.number().int(),
  pageSize: z.number().int(),
  totalPages: z.number().int(),
};
const pageQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).optional(),
  pageSize: z.coerce.number().int().min(1).optional().openapi({ description: 'Clamped to 100 (default 20)' }),
});
const StepType = z.enum([
  'TRIGGER',
  'SEND_EMAIL',
  'DELAY',
  'WAIT_FOR_EVENT',
  'CONDITION',
  'WEBHOOK',
  'UPDATE_CONTACT',
  'EXIT',
]);
// Request bodies travel to the workflows service as JSON, which validates them (422 with field paths).
const WorkflowInput = z.object({
  name: z.string().min(1).max(200),
  description: z.string().max(1000).nullable().optional(),
  eventName: z.string().optional().openapi({ description: 'The trigger event (or triggerConfig: {eventName})' }),
  triggerType: z.enum(['EVENT', 'MANUAL']).optional(),
  triggerConfig: z.object({ eventName: z.string() }).optional(),
  enabled: z.boolean().optional(),
  allowReentry: z.boolean().optional(),
});
const StepInput = z.object({
  type: StepType,
  name: z.string().optional(),
  config: z.record(z.unknown()).openapi({ description: 'Per step type, see docs/workflows.md' }),
});
const TransitionInput = z.object({
  fromStepId: uuid,
  toStepId: uuid,
  branch: z.enum(['yes', 'no']).optional(),
  waitOutcome: z.enum(['EVENT', 'TIMEOUT']).optional(),
});
const WORKFLOW_ID = z.object({ id: uuid.openapi({ description: 'Workflow id' }) });

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
  const r = new ApiRouter();
  const secret = guards.secret;
  const id = (req: Request) => String(req.params.id);
  const base = (req: Request) => ({ projectId: req.projectId, workflowId: id(req) });

  r.get(
    '/workflows',
    {
      summary: 'List workflows (numbered pages)',
      tag: 'Workflows',
      auth: 'secret',
      query: pageQuery,
      responses: { 200: z.object({ data: z.array(Workflow), ...paging }) },
      errors: [422],
    },
    secret,
    async (req, res) => {
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
    },
  );

  r.get(
    '/workflows/fields',
    {
      summary: 'Fields usable in CONDITION steps',
      tag: 'Workflows',
      auth: 'secret',
      query: z.object({ workflowId: stringQuery() }),
      responses: { 200: z.array(z.object({ field: z.string(), type: z.string(), source: z.string() })) },
    },
    secret,
    async (req, res) => {
      const out = await workflows.listWorkflowFields({
        projectId: req.projectId,
        workflowId: stringParam(req.query, 'workflowId') ?? '',
      });
      res.json(out.fields.map((f) => ({ field: f.field, type: f.type, source: f.source })));
    },
  );

  r.get(
    '/workflows/webhook-secret',
    {
      summary: "The project's webhook signing secret (created on first use)",
      description:
        'HMAC-SHA256 key of the X-Webhook-Signature header of WEBHOOK step deliveries. ' +
        'An addition of this platform: SPEC.md does not say where this secret lives.',
      tag: 'Workflows',
      auth: 'secret',
      responses: { 200: z.object({ secret: z.string() }) },
    },
    secret,
    async (req, res) => {
      res.json({ secret: (await workflows.getWebhookSecret({ projectId: req.projectId })).secret });
    },
  );

  r.post(
    '/workflows',
    {
      summary: 'Create a (disabled) workflow',
      tag: 'Workflows',
      auth: 'secret',
      body: WorkflowInput,
      responses: { 201: Workflow },
    },
    secret,
    async (req, res) => {
      const out = await workflows.createWorkflow({ projectId: req.projectId, body: bodyValue(req) });
      res.status(201).json(json(WorkflowSchema, out.workflow));
    },
  );

  r.get(
    '/workflows/:id',
    {
      summary: 'A workflow with its steps and transitions',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      responses: { 200: Workflow },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(json(WorkflowSchema, (await workflows.getWorkflow({ projectId: req.projectId, id: id(req) })).workflow));
    },
  );

  r.patch(
    '/workflows/:id',
    {
      summary: 'Update, enable or disable a workflow',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      body: WorkflowInput.partial(),
      responses: { 200: Workflow },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await workflows.updateWorkflow({ projectId: req.projectId, id: id(req), body: bodyValue(req) });
      res.json(json(WorkflowSchema, out.workflow));
    },
  );

  r.delete(
    '/workflows/:id',
    {
      summary: 'Delete a workflow without active executions',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      responses: { 204: null },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      await workflows.deleteWorkflow({ projectId: req.projectId, id: id(req) });
      res.status(204).end();
    },
  );

  r.post(
    '/workflows/:id/steps',
    {
      summary: 'Add a step',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      body: StepInput,
      responses: { 201: Step },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await workflows.addStep({ ...base(req), body: bodyValue(req) });
      res.status(201).json(json(StepSchema, out.step));
    },
  );

  r.patch(
    '/workflows/:id/steps/:stepId',
    {
      summary: 'Update a step',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      body: StepInput.omit({ type: true }).partial(),
      responses: { 200: Step },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await workflows.updateStep({ ...base(req), stepId: String(req.params.stepId), body: bodyValue(req) });
      res.json(json(StepSchema, out.step));
    },
  );

  r.delete(
    '/workflows/:id/steps/:stepId',
    {
      summary: 'Delete a step (splice=true reconnects its neighbours)',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      query: z.object({ splice: z.enum(['true', 'false']).optional() }),
      responses: { 204: null },
      errors: [404, 409, 422],
    },
    secret,
    async (req, res) => {
      const splice = boolParam(req.query, 'splice') ?? false;
      await workflows.deleteStep({ ...base(req), stepId: String(req.params.stepId), splice });
      res.status(204).end();
    },
  );

  r.post(
    '/workflows/:id/transitions',
    {
      summary: 'Connect two steps',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      body: TransitionInput,
      responses: { 201: Transition },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await workflows.addTransition({ ...base(req), body: bodyValue(req) });
      res.status(201).json(json(TransitionSchema, out.transition));
    },
  );

  r.delete(
    '/workflows/:id/transitions/:transitionId',
    {
      summary: 'Remove a transition',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      responses: { 204: null },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      await workflows.deleteTransition({ ...base(req), transitionId: String(req.params.transitionId) });
      res.status(204).end();
    },
  );

  r.post(
    '/workflows/:id/executions/cancel-all',
    {
      summary: 'Cancel every active execution of a workflow',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      responses: { 200: z.object({ cancelled: z.number().int() }) },
      errors: [404],
    },
    secret,
    async (req, res) => {
      const out = await workflows.cancelAllExecutions(base(req));
      res.json({ cancelled: Number(out.cancelled) });
    },
  );

  r.post(
    '/workflows/:id/executions',
    {
      summary: 'Start an execution for a contact (MANUAL trigger)',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      body: z.object({
        contactId: uuid.optional(),
        email: z.string().email().optional(),
        context: z.record(z.unknown()).optional(),
      }),
      responses: { 201: Execution },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await workflows.startExecution({ ...base(req), body: bodyValue(req) });
      res.status(201).json(json(ExecutionSchema, out.execution));
    },
  );

  r.get(
    '/workflows/:id/executions',
    {
      summary: 'Executions of a workflow (numbered pages)',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      query: pageQuery.extend({ status: stringQuery() }),
      responses: { 200: z.object({ data: z.array(Execution), ...paging }) },
      errors: [404, 422],
    },
    secret,
    async (req, res) => {
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
    },
  );

  r.get(
    '/workflows/:id/executions/:executionId',
    {
      summary: 'An execution with its step history',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      responses: { 200: Execution },
      errors: [404],
    },
    secret,
    async (req, res) => {
      const out = await workflows.getExecution({ ...base(req), executionId: String(req.params.executionId) });
      res.json(json(ExecutionSchema, out.execution));
    },
  );

  r.delete(
    '/workflows/:id/executions/:executionId',
    {
      summary: 'Cancel an execution',
      tag: 'Workflows',
      auth: 'secret',
      params: WORKFLOW_ID,
      responses: { 200: Execution },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await workflows.cancelExecution({ ...base(req), executionId: String(req.params.executionId) });
      res.json(json(ExecutionSchema, out.execution));
    },
  );

  return r.router;
}
