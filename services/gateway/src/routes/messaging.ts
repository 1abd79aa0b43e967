import type { Client } from '@connectrpc/connect';
import { Router, type Request } from 'express';
import type { JsonObject } from '@bufbuild/protobuf';
import { notFound, validationError } from '@svc/lib/errors';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { CampaignsService } from '@svc/proto/svc/campaigns/v1/campaigns_pb';
import type { WorkflowsService } from '@svc/proto/svc/workflows/v1/workflows_pb';
import type { KeyGuards } from '../http/guards.js';
import { objectBody, stringField } from '../http/body.js';
import { wrapped } from '../http/envelope.js';
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

/** A project id in a path or body must be the key's own project; any other is a 404, never a leak. */
function requireOwnProject(req: Request, projectId: unknown): void {
  if (projectId !== undefined && projectId !== req.projectId) throw notFound('Project', String(projectId));
}

/** Sender domains, templates, /v1/send, /v1/verify and the activity feed (secret key). */
export function messagingRouter(
  messaging: Client<typeof MessagingService>,
  guards: KeyGuards,
  workflows?: Client<typeof WorkflowsService>,
  campaigns?: Client<typeof CampaignsService>,
): Router {
  const r = Router();
  const secret = guards.secret;

  r.post('/domains', secret, async (req, res) => {
    const body = objectBody(req.body);
    requireOwnProject(req, body.projectId);
    const out = await messaging.createDomain({ projectId: req.projectId, domain: stringField(body, 'domain') ?? '' });
    res.status(201).json(domainJson(out.domain!));
  });

  r.get('/domains/project/:projectId', secret, async (req, res) => {
    requireOwnProject(req, req.params.projectId);
    res.json((await messaging.listDomains({ projectId: req.projectId })).domains.map(domainJson));
  });

  r.get('/domains/:id/verify', secret, async (req, res) => {
    res.json(
      domainJson((await messaging.verifyDomain({ projectId: req.projectId, id: String(req.params.id) })).domain!),
    );
  });

  r.delete('/domains/:id', secret, async (req, res) => {
    await messaging.deleteDomain({ projectId: req.projectId, id: String(req.params.id) });
    res.status(204).end();
  });

  r.get('/templates', secret, async (req, res) => {
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
  });

  r.post('/templates', secret, async (req, res) => {
    const fields = templateFields(req.body, 'create');
    res
      .status(201)
      .json(templateJson((await messaging.createTemplate({ projectId: req.projectId, fields })).template!));
  });

  // Live preview of a draft (the console's editor): `{subject, body, data?}` -> the rendered pair; a Liquid error
  // is a 422 per field with its line and column. Sample `data` is the recipient's custom data (email included).
  r.post('/templates/preview', secret, async (req, res) => {
    const body = objectBody(req.body);
    const data = body.data ?? {};
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw validationError([{ field: 'data', message: 'Expected object', code: 'invalid_type', received: data }]);
    }
    const out = await messaging.previewTemplate({
      projectId: req.projectId,
      subject: stringField(body, 'subject') ?? '',
      body: stringField(body, 'body') ?? '',
      data: data as JsonObject,
    });
    res.json({ subject: out.subject, body: out.body });
  });

  r.get('/templates/:id', secret, async (req, res) => {
    res.json(
      templateJson((await messaging.getTemplate({ projectId: req.projectId, id: String(req.params.id) })).template!),
    );
  });

  r.patch('/templates/:id', secret, async (req, res) => {
    const fields = templateFields(req.body, 'update');
    const out = await messaging.updateTemplate({ projectId: req.projectId, id: String(req.params.id), fields });
    res.json(templateJson(out.template!));
  });

  r.delete('/templates/:id', secret, async (req, res) => {
    await messaging.deleteTemplate({ projectId: req.projectId, id: String(req.params.id) });
    res.status(204).end();
  });

  r.post('/templates/:id/duplicate', secret, async (req, res) => {
    res
      .status(201)
      .json(
        templateJson(
          (await messaging.duplicateTemplate({ projectId: req.projectId, id: String(req.params.id) })).template!,
        ),
      );
  });

  r.get('/templates/:id/usage', secret, async (req, res) => {
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
  });

  r.post('/v1/send', guards.send, async (req, res) => {
    // Messaging records the key with the queued emails: a repeat never queues twice, even if Redis lost the key.
    const idem = req.idempotency;
    const request = sendRequest(req.body, {
      projectId: req.projectId,
      idempotencyKey: idem?.key ?? '',
      idempotencyFingerprint: idem?.fingerprint ?? '',
    });
    const out = await messaging.sendEmail(request).catch((err) => {
      throw sendError(req.body, err);
    });
    if (out.replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.json(
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
  });

  r.post('/v1/verify', secret, async (req, res) => {
    const out = await messaging.verifyEmail(verifyRequest(req.body, req.projectId));
    res.json(wrapped(verificationJson(out.result!)));
  });

  r.get('/activity', secret, async (req, res) => {
    const q = (name: string) => stringParam(req.query, name) ?? '';
    const out = await messaging.listActivity({
      projectId: req.projectId,
      limit: q('limit'),
      cursor: q('cursor'),
      type: q('type'),
      contactId: q('contactId'),
    });
    res.json({ data: out.items.map(activityJson), cursor: out.cursor, hasMore: out.hasMore, total: Number(out.total) });
  });

  r.get('/activity/stats', secret, async (req, res) => {
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
  });

  r.get('/activity/recent-count', secret, async (req, res) => {
    const out = await messaging.getRecentActivityCount({
      projectId: req.projectId,
      minutes: stringParam(req.query, 'minutes') ?? '',
    });
    res.json({ count: Number(out.count), since: iso(out.since) });
  });

  r.get('/activity/types', secret, async (req, res) => {
    res.json({ types: (await messaging.listActivityTypes({ projectId: req.projectId })).types });
  });

  r.get('/activity/upcoming', secret, async (req, res) => {
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
  });

  return r;
}
