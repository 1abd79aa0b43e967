import type { Client } from '@connectrpc/connect';
import type { Router, Request, RequestHandler } from 'express';
import type { JsonObject } from '@bufbuild/protobuf';
import { notFound } from '@svc/lib/errors';
import { jsonObject } from '@svc/lib/json-object';
import type { CallBatcherOptions } from '@svc/lib/call-batcher';
import type { MessagingService, SendEmailRequest, SendEmailResponse } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { CampaignsService } from '@svc/proto/svc/campaigns/v1/campaigns_pb';
import type { WorkflowsService } from '@svc/proto/svc/workflows/v1/workflows_pb';
import { coalescedCall } from '../http/coalesced-call.js';
import type { KeyGuards } from '../http/guards.js';
import { objectBody, stringField } from '../http/body.js';
import { sendJson, wrapped } from '../http/envelope.js';
import { stringParam } from '../http/query.js';
import { iso } from './identity-json.js';
import {
  activityJson,
  domainJson,
  sendError,
  sendRequest,
  templateFields,
  templateJson,
  verificationJson,
  verifyRequest,
} from './messaging-json.js';
import { z } from 'zod';
import { ApiRouter, cursorPage, flatBadRequest, id, isoDate, json, stringQuery, wrappedSchema } from '../http/api.js';

const Domain = z
  .object({
    id,
    domain: z.string(),
    projectId: id,
    status: z.string().openapi({ example: 'pending' }),
    verified: z.boolean(),
    records: z.array(
      z.object({ type: z.string(), name: z.string(), value: z.string(), purpose: z.string(), verified: z.boolean() }),
    ),
    dkimSelector: z.string(),
    createdAt: isoDate.nullable(),
    verifiedAt: isoDate.nullable(),
    lastCheckedAt: isoDate.nullable(),
  })
  .openapi('Domain');
const TemplateType = z.enum(['TRANSACTIONAL', 'MARKETING', 'HEADLESS']);
const Template = z
  .object({
    id,
    name: z.string(),
    description: z.string(),
    subject: z.string(),
    body: z.string().openapi({ description: 'HTML (Liquid template language)' }),
    from: z.string(),
    fromName: z.string().nullable(),
    replyTo: z.string().nullable(),
    type: TemplateType,
    projectId: id,
    createdAt: isoDate.nullable(),
    updatedAt: isoDate.nullable(),
  })
  .openapi('Template');
const Address = z.union([
  z.string().email(),
  z.object({ name: z.string().nullable().optional(), email: z.string().email() }),
]);
const TemplateInput = z.object({
  name: z.string().min(1),
  description: z.string().nullable().optional(),
  subject: z.string().min(1).max(998),
  body: z.string().min(1),
  from: Address,
  fromName: z.string().nullable().optional(),
  replyTo: z.string().email().nullable().optional(),
  type: TemplateType.optional(),
});
const Attachment = z.object({
  filename: z.string(),
  content: z.string().openapi({ description: 'Base64' }),
  contentType: z.string(),
});
const SendInput = z
  .object({
    to: z.union([Address, z.array(Address)]),
    subject: z.string().min(1).max(998).optional(),
    body: z.string().min(1).optional(),
    template: id.optional(),
    from: Address.optional(),
    name: z.string().optional().openapi({ deprecated: true }),
    subscribed: z.boolean().optional(),
    data: json.optional(),
    headers: z.record(z.string().max(998)).optional(),
    reply: z.string().email().optional(),
    attachments: z.array(Attachment).max(10).optional(),
  })
  .openapi('SendRequest', { description: 'Either template, or subject and body' });
const Sent = wrappedSchema(
  z.object({
    emails: z.array(
      z.object({
        contact: z.object({ id, email: z.string() }),
        email: id,
        status: z.enum(['queued', 'suppressed']),
        reason: z.enum(['unsubscribed', 'bounced', 'complained']).optional(),
      }),
    ),
    timestamp: isoDate,
  }),
);
const Verification = z
  .object({
    email: z.string(),
    valid: z.boolean(),
    isDisposable: z.boolean(),
    isAlias: z.boolean(),
    isTypo: z.boolean(),
    isPlusAddressed: z.boolean(),
    isPersonalEmail: z.boolean(),
    domainExists: z.boolean(),
    hasWebsite: z.boolean(),
    hasMxRecords: z.boolean(),
    reasons: z.array(z.string()),
    suggestion: z.string().optional(),
  })
  .openapi('EmailVerification');
const Activity = z
  .object({
    id,
    type: z.string().openapi({ example: 'email.opened' }),
    contactId: id.nullable(),
    emailId: id.nullable(),
    email: z.string().nullable(),
    name: z.string().nullable(),
    data: json,
    occurredAt: isoDate.nullable(),
  })
  .openapi('Activity');
const Upcoming = z.object({
  kind: z.string().openapi({ description: 'campaign, execution, or a kind messaging schedules' }),
  id,
  name: z.string(),
  dueAt: isoDate.nullable(),
  status: z.string().optional(),
  workflowId: id.optional(),
  contactId: id.optional(),
  step: z.object({ id, name: z.string(), type: z.string() }).optional(),
});
const TEMPLATE_ID = z.object({ id: id.openapi({ description: 'Template id' }) });

/** A project id in a path or body must be the key's own project; any other is a 404, never a leak. */
function requireOwnProject(req: Request, projectId: unknown): void {
  if (projectId !== undefined && projectId !== req.projectId) throw notFound('Project', String(projectId));
}

/** The last handler of `/v1/send` (its route and the gateway's lane): the body to one SendEmail, its answer. */
export function sendHandler(messaging: Client<typeof MessagingService>, sendBatch: CallBatcherOptions): RequestHandler {
  // Concurrent sends reach messaging in one SendEmails call; a send with attachments (up to 40 MB) goes alone.
  const sendEmail = coalescedCall<SendEmailRequest, SendEmailResponse>({
    ...sendBatch,
    unary: (request) => messaging.sendEmail(request),
    batch: async (items) => (await messaging.sendEmails({ items })).results,
    ok: 'sent',
    alone: (request) => request.attachments.length > 0,
  });
  return async (req, res) => {
    // Messaging records the key with the queued emails: a repeat never queues twice, even if Redis lost the key.
    const idem = req.idempotency;
    const request = sendRequest(req.body, {
      projectId: req.projectId,
      idempotencyKey: idem?.key ?? '',
      idempotencyFingerprint: idem?.fingerprint ?? '',
    });
    const out = await sendEmail(request).catch((err) => {
      throw sendError(req.body, err);
    });
    if (out.replayed) res.setHeader('Idempotent-Replayed', 'true');
    sendJson(
      res,
      wrapped({
        // status queued or suppressed; a withheld email says why (unsubscribed, bounced, complained).
        emails: out.emails.map((e) => ({
          contact: { id: e.contactId, email: e.contactEmail },
          email: e.emailId,
          status: e.status || 'queued',
          ...(e.reason ? { reason: e.reason } : {}),
        })),
        timestamp: iso(out.timestamp),
      }),
    );
  };
}

/** Sender domains, templates, /v1/send (`send`: sendHandler), /v1/verify and the activity feed (secret key). */
export function messagingRouter(
  messaging: Client<typeof MessagingService>,
  guards: KeyGuards,
  send: RequestHandler,
  workflows?: Client<typeof WorkflowsService>,
  campaigns?: Client<typeof CampaignsService>,
): Router {
  const r = new ApiRouter();
  const secret = guards.secret;

  r.post(
    '/domains',
    {
      summary: 'Add a sender domain (answers the DNS records to publish)',
      tag: 'Domains',
      auth: 'secret',
      body: z.object({ domain: z.string(), projectId: id.optional() }),
      responses: { 201: Domain },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const body = objectBody(req.body);
      requireOwnProject(req, body.projectId);
      const out = await messaging.createDomain({ projectId: req.projectId, domain: stringField(body, 'domain') ?? '' });
      res.status(201).json(domainJson(out.domain!));
    },
  );

  r.get(
    '/domains/project/:projectId',
    {
      summary: "The project's sender domains",
      tag: 'Domains',
      auth: 'secret',
      responses: { 200: z.array(Domain) },
      errors: [404],
    },
    secret,
    async (req, res) => {
      requireOwnProject(req, req.params.projectId);
      res.json((await messaging.listDomains({ projectId: req.projectId })).domains.map(domainJson));
    },
  );

  r.get(
    '/domains/:id/verify',
    {
      summary: "Check a domain's DNS records now",
      tag: 'Domains',
      auth: 'secret',
      responses: { 200: Domain },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(
        domainJson((await messaging.verifyDomain({ projectId: req.projectId, id: String(req.params.id) })).domain!),
      );
    },
  );

  r.delete(
    '/domains/:id',
    { summary: 'Remove a sender domain', tag: 'Domains', auth: 'secret', responses: { 204: null }, errors: [404] },
    secret,
    async (req, res) => {
      await messaging.deleteDomain({ projectId: req.projectId, id: String(req.params.id) });
      res.status(204).end();
    },
  );

  r.get(
    '/templates',
    {
      summary: 'List templates (numbered pages)',
      tag: 'Templates',
      auth: 'secret',
      query: z.object({
        page: stringQuery(),
        pageSize: stringQuery(),
        type: TemplateType.optional(),
        search: stringQuery(),
        sort: stringQuery(),
        dir: z.enum(['asc', 'desc']).optional(),
      }),
      responses: {
        200: z.object({
          data: z.array(Template),
          total: z.number().int(),
          page: z.number().int(),
          pageSize: z.number().int(),
          totalPages: z.number().int(),
        }),
      },
    },
    secret,
    async (req, res) => {
      const q = (name: string) => stringParam(req.query, name) ?? '';
      const out = await messaging.listTemplates({
        projectId: req.projectId,
        page: q('page'),
        pageSize: q('pageSize'),
        type: q('type'),
        search: q('search'),
        sort: q('sort'),
        dir: q('dir'),
      });
      res.json({
        data: out.templates.map(templateJson),
        total: Number(out.total),
        page: out.page,
        pageSize: out.pageSize,
        totalPages: out.totalPages,
      });
    },
  );

  r.post(
    '/templates',
    {
      summary: 'Create a template',
      tag: 'Templates',
      auth: 'secret',
      body: TemplateInput,
      responses: { 201: Template, 400: flatBadRequest('a missing from') },
      errors: [403],
    },
    secret,
    async (req, res) => {
      const fields = templateFields(req.body, 'create');
      res
        .status(201)
        .json(templateJson((await messaging.createTemplate({ projectId: req.projectId, fields })).template!));
    },
  );

  // Live preview of a draft (the console's editor): `{subject, body, data?}` -> the rendered pair; a Liquid error
  // is a 422 per field with its line and column. Sample `data` is the recipient's custom data (email included).
  r.post(
    '/templates/preview',
    {
      summary: 'Render a draft subject and body with sample data (the console editor)',
      tag: 'Templates',
      auth: 'secret',
      body: z.object({
        subject: z.string(),
        body: z.string(),
        // jsonObject, not z.record: a `__proto__` key renders like any other key, as it does in a real send.
        data: jsonObject()
          .optional()
          .openapi({ type: 'object', additionalProperties: true, description: 'Sample custom data of the recipient' }),
      }),
      responses: { 200: z.object({ subject: z.string(), body: z.string() }) },
      errors: [422],
      validate: true,
    },
    secret,
    async (req, res) => {
      const { subject, body, data } = req.body as { subject: string; body: string; data?: JsonObject };
      const out = await messaging.previewTemplate({ projectId: req.projectId, subject, body, data: data ?? {} });
      res.json({ subject: out.subject, body: out.body });
    },
  );

  r.get(
    '/templates/:id',
    {
      summary: 'A template',
      tag: 'Templates',
      auth: 'secret',
      params: TEMPLATE_ID,
      responses: { 200: Template },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(
        templateJson((await messaging.getTemplate({ projectId: req.projectId, id: String(req.params.id) })).template!),
      );
    },
  );

  r.patch(
    '/templates/:id',
    {
      summary: 'Update a template (null clears description, fromName, replyTo)',
      tag: 'Templates',
      auth: 'secret',
      params: TEMPLATE_ID,
      body: TemplateInput.partial(),
      responses: { 200: Template },
      errors: [403, 404],
    },
    secret,
    async (req, res) => {
      const fields = templateFields(req.body, 'update');
      const out = await messaging.updateTemplate({ projectId: req.projectId, id: String(req.params.id), fields });
      res.json(templateJson(out.template!));
    },
  );

  r.delete(
    '/templates/:id',
    {
      summary: 'Delete a template',
      tag: 'Templates',
      auth: 'secret',
      params: TEMPLATE_ID,
      responses: { 204: null },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      // A template a workflow's SEND_EMAIL step uses stays (409 naming the steps): messaging asks workflows while it
      // holds the template, so a step saved at the same moment is either named or refused.
      await messaging.deleteTemplate({ projectId: req.projectId, id: String(req.params.id) });
      res.status(204).end();
    },
  );

  r.post(
    '/templates/:id/duplicate',
    {
      summary: 'Copy a template',
      tag: 'Templates',
      auth: 'secret',
      params: TEMPLATE_ID,
      responses: { 201: Template },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res
        .status(201)
        .json(
          templateJson(
            (await messaging.duplicateTemplate({ projectId: req.projectId, id: String(req.params.id) })).template!,
          ),
        );
    },
  );

  r.get(
    '/templates/:id/usage',
    {
      summary: 'Campaigns and workflow steps that use a template',
      tag: 'Templates',
      auth: 'secret',
      params: TEMPLATE_ID,
      responses: {
        200: z.object({
          templateId: id,
          campaigns: z.array(z.object({ id, name: z.string() })),
          workflows: z.array(
            z.object({ workflowId: id, workflowName: z.string().optional(), stepId: id, name: z.string() }),
          ),
        }),
      },
      errors: [404],
    },
    secret,
    async (req, res) => {
      const id = String(req.params.id);
      const out = await messaging.getTemplateUsage({ projectId: req.projectId, id });
      // SEND_EMAIL steps live in the workflows service (asked once the template is known to exist).
      const steps = workflows
        ? (await workflows.findWorkflowsUsing({ projectId: req.projectId, templateId: id })).usages
        : [];
      res.json({
        templateId: id,
        campaigns: out.campaigns.map((c) => ({ id: c.id, name: c.name })),
        workflows: [
          ...out.workflowSteps.map((s) => ({ workflowId: s.parentId, stepId: s.id, name: s.name })),
          ...steps.map((s) => ({
            workflowId: s.workflowId,
            workflowName: s.workflowName,
            stepId: s.stepId,
            name: s.stepName,
          })),
        ],
      });
    },
  );

  r.post(
    '/v1/send',
    {
      summary: 'Send a transactional email to one or more recipients',
      tag: 'Sending',
      auth: 'secret',
      body: SendInput,
      responses: { 200: Sent },
      errors: [403, 409],
    },
    guards.send,
    send,
  );

  r.post(
    '/v1/verify',
    {
      summary: 'Check an email address (syntax, domain, MX, disposable)',
      tag: 'Sending',
      auth: 'secret',
      body: z.object({ email: z.string().email() }),
      responses: { 200: wrappedSchema(Verification) },
    },
    secret,
    async (req, res) => {
      const out = await messaging.verifyEmail(verifyRequest(req.body, req.projectId));
      res.json(wrapped(verificationJson(out.result!)));
    },
  );

  r.get(
    '/activity',
    {
      summary: 'The activity feed (cursor pages)',
      tag: 'Activity',
      auth: 'secret',
      query: z.object({
        limit: stringQuery(),
        cursor: stringQuery(),
        type: stringQuery('An activity type, e.g. email.opened'),
        contactId: stringQuery(),
      }),
      responses: { 200: cursorPage(Activity).extend({ total: z.number().int() }) },
    },
    secret,
    async (req, res) => {
      const q = (name: string) => stringParam(req.query, name) ?? '';
      const out = await messaging.listActivity({
        projectId: req.projectId,
        limit: q('limit'),
        cursor: q('cursor'),
        type: q('type'),
        contactId: q('contactId'),
      });
      res.json({
        data: out.items.map(activityJson),
        cursor: out.cursor,
        hasMore: out.hasMore,
        total: Number(out.total),
      });
    },
  );

  r.get(
    '/activity/stats',
    {
      summary: 'Activity counts and email rates over a window',
      tag: 'Activity',
      auth: 'secret',
      query: z.object({ days: stringQuery('Window in days') }),
      responses: {
        200: z.object({
          days: z.number().int(),
          total: z.number().int(),
          byType: z.record(z.number().int()),
          emails: z
            .record(z.number())
            .openapi({ description: 'Counts per email status, openRate, clickRate, bounceRate' }),
        }),
      },
    },
    secret,
    async (req, res) => {
      const out = await messaging.getActivityStats({
        projectId: req.projectId,
        days: stringParam(req.query, 'days') ?? '',
      });
      const e = out.emails!;
      const rate = (n: bigint) => (e.sent > 0n ? Math.round((Number(n) / Number(e.sent)) * 10000) / 10000 : 0);
      res.json({
        days: out.days,
        total: Number(out.total),
        byType: Object.fromEntries(out.byType.map((t) => [t.type, Number(t.count)])),
        emails: {
          ...Object.fromEntries(
            Object.entries(e)
              .filter(([k]) => k !== '$typeName')
              .map(([k, v]) => [k, Number(v)]),
          ),
          openRate: rate(e.opened),
          clickRate: rate(e.clicked),
          bounceRate: rate(e.bounced),
        },
      });
    },
  );

  r.get(
    '/activity/recent-count',
    {
      summary: 'Activity in the last minutes',
      tag: 'Activity',
      auth: 'secret',
      query: z.object({ minutes: stringQuery() }),
      responses: { 200: z.object({ count: z.number().int(), since: isoDate.nullable() }) },
    },
    secret,
    async (req, res) => {
      const out = await messaging.getRecentActivityCount({
        projectId: req.projectId,
        minutes: stringParam(req.query, 'minutes') ?? '',
      });
      res.json({ count: Number(out.count), since: iso(out.since) });
    },
  );

  r.get(
    '/activity/types',
    {
      summary: 'The activity types',
      tag: 'Activity',
      auth: 'secret',
      responses: { 200: z.object({ types: z.array(z.string()) }) },
    },
    secret,
    async (req, res) => {
      res.json({ types: (await messaging.listActivityTypes({ projectId: req.projectId })).types });
    },
  );

  r.get(
    '/activity/upcoming',
    {
      summary: 'What is due next: scheduled campaigns, waiting workflow executions',
      tag: 'Activity',
      auth: 'secret',
      responses: { 200: z.object({ data: z.array(Upcoming) }) },
    },
    secret,
    async (req, res) => {
      const [out, waiting, scheduled] = await Promise.all([
        messaging.listUpcoming({ projectId: req.projectId }),
        workflows?.listUpcomingExecutions({ projectId: req.projectId, limit: 100 }),
        campaigns?.listUpcomingCampaigns({ projectId: req.projectId, limit: 100 }),
      ]);
      const items: { kind: string; id: string; name: string; dueAt: string | null }[] = out.items.map((i) => ({
        kind: i.kind,
        id: i.id,
        name: i.name,
        dueAt: iso(i.dueAt),
      }));
      // Scheduled campaigns, due at their scheduledFor.
      for (const c of scheduled?.campaigns ?? []) {
        items.push({ kind: 'campaign', id: c.id, name: c.name, dueAt: iso(c.scheduledFor), ...{ status: c.status } });
      }
      // Waiting executions: `name` is the workflow's, with the step it waits in and the contact.
      for (const e of waiting?.executions ?? []) {
        items.push({
          kind: 'execution',
          id: e.id,
          name: e.workflowName,
          dueAt: iso(e.dueAt),
          ...{
            workflowId: e.workflowId,
            contactId: e.contactId,
            step: { id: e.stepId, name: e.stepName, type: e.stepType },
          },
        });
      }
      items.sort((a, b) => (a.dueAt ?? '').localeCompare(b.dueAt ?? ''));
      res.json({ data: items });
    },
  );

  return r.router;
}
