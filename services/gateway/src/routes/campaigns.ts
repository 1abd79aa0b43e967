import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import { badRequest } from '@svc/lib/errors';
import {
  type Campaign,
  type CampaignFields,
  CampaignFieldsSchema,
  type CampaignsService,
  type CampaignStats,
} from '@svc/proto/svc/campaigns/v1/campaigns_pb';
import { Router, type Request } from 'express';
import { objectBody, stringField } from '../http/body.js';
import { wrapped } from '../http/envelope.js';
import type { KeyGuards } from '../http/guards.js';
import { messageFromJson } from '../http/json-message.js';
import { stringParam } from '../http/query.js';
import { iso } from './identity-json.js';

export const campaignJson = (c: Campaign) => ({
  id: c.id,
  name: c.name,
  description: c.description,
  subject: c.subject,
  body: c.body,
  from: c.from,
  fromName: c.fromName,
  replyTo: c.replyTo,
  type: c.type,
  status: c.status,
  audienceType: c.audienceType,
  segmentId: c.segmentId || null,
  audienceCondition: c.audienceCondition ? toJson(ValueSchema, c.audienceCondition) : null,
  scheduledFor: iso(c.scheduledFor),
  totalRecipients: Number(c.totalRecipients),
  sentCount: Number(c.sentCount),
  deliveredCount: Number(c.deliveredCount),
  openedCount: Number(c.openedCount),
  clickedCount: Number(c.clickedCount),
  bouncedCount: Number(c.bouncedCount),
  projectId: c.projectId,
  sentAt: iso(c.sentAt),
  createdAt: iso(c.createdAt),
  updatedAt: iso(c.updatedAt),
});

export const campaignStatsJson = (s: CampaignStats) => ({
  campaignId: s.campaignId,
  name: s.name,
  status: s.status,
  sentAt: iso(s.sentAt),
  createdAt: iso(s.createdAt),
  totalRecipients: Number(s.totalRecipients),
  pending: Number(s.pending),
  queued: Number(s.queued),
  suppressed: Number(s.suppressed),
  failed: Number(s.failed),
  sent: Number(s.sent),
  delivered: Number(s.delivered),
  opened: Number(s.opened),
  clicked: Number(s.clicked),
  bounced: Number(s.bounced),
  complained: Number(s.complained),
  openRate: s.openRate,
  clickRate: s.clickRate,
  deliveryRate: s.deliveryRate,
  bounceRate: s.bounceRate,
  lastError: s.lastError || null,
});

/** What send and cancel answer about the campaign (SPEC.md: id, name, status, scheduledFor). */
const moveJson = (c: Campaign) => ({ id: c.id, name: c.name, status: c.status, scheduledFor: iso(c.scheduledFor) });

/**
 * JSON null clears a text field or leaves an audience field unset; the service applies the audience
 * rule. The filter tree travels as a google.protobuf.Value (the JSON mapper builds it).
 */
const campaignFields = (body: unknown): CampaignFields =>
  messageFromJson(CampaignFieldsSchema, body, {
    nulls: {
      description: 'empty',
      fromName: 'empty',
      replyTo: 'empty',
      segmentId: 'absent',
      audienceCondition: 'absent',
    },
  });

/** `scheduledFor`: a date string (the service parses it), an epoch in milliseconds, or null/absent for now. */
function scheduledFor(body: Record<string, unknown>): string | undefined {
  const v = body.scheduledFor;
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v) && !Number.isNaN(new Date(v).getTime()))
    return new Date(v).toISOString();
  throw badRequest('scheduledFor is not a parseable date', { field: 'scheduledFor', received: v });
}

/** Campaigns (secret key) and the campaign analytics. */
export function campaignsRouter(campaigns: Client<typeof CampaignsService>, guards: KeyGuards): Router {
  const r = Router();
  const secret = guards.secret;
  const id = (req: Request) => String(req.params.id);

  r.get('/campaigns', secret, async (req, res) => {
    const q = (name: string) => stringParam(req.query, name) ?? '';
    const out = await campaigns.listCampaigns({
      projectId: req.projectId,
      page: q('page'),
      pageSize: q('pageSize'),
      status: q('status'),
      search: q('search'),
      sort: q('sort'),
      dir: q('dir'),
    });
    res.json({
      data: out.campaigns.map(campaignJson),
      page: out.page,
      pageSize: out.pageSize,
      total: Number(out.total),
      totalPages: out.totalPages,
    });
  });

  r.post('/campaigns', secret, async (req, res) => {
    const out = await campaigns.createCampaign({ projectId: req.projectId, fields: campaignFields(req.body) });
    res.status(201).json(wrapped(campaignJson(out.campaign!)));
  });

  r.get('/campaigns/:id', secret, async (req, res) => {
    res.json(campaignJson((await campaigns.getCampaign({ projectId: req.projectId, id: id(req) })).campaign!));
  });

  r.put('/campaigns/:id', secret, async (req, res) => {
    const fields = campaignFields(req.body);
    const out = await campaigns.updateCampaign({ projectId: req.projectId, id: id(req), fields });
    res.json(campaignJson(out.campaign!));
  });

  r.delete('/campaigns/:id', secret, async (req, res) => {
    await campaigns.deleteCampaign({ projectId: req.projectId, id: id(req) });
    res.status(204).end();
  });

  r.post('/campaigns/:id/duplicate', secret, async (req, res) => {
    const out = await campaigns.duplicateCampaign({ projectId: req.projectId, id: id(req) });
    res.status(201).json(campaignJson(out.campaign!));
  });

  r.post('/campaigns/:id/send', secret, async (req, res) => {
    const at = scheduledFor(objectBody(req.body));
    const out = await campaigns.sendCampaign({ projectId: req.projectId, id: id(req), scheduledFor: at });
    res.json({ ...wrapped(moveJson(out.campaign!)), message: out.message });
  });

  r.post('/campaigns/:id/cancel', secret, async (req, res) => {
    const out = await campaigns.cancelCampaign({ projectId: req.projectId, id: id(req) });
    res.json({ ...wrapped(moveJson(out.campaign!)), message: out.message });
  });

  r.post('/campaigns/:id/test', secret, async (req, res) => {
    const email = stringField(objectBody(req.body), 'email') ?? '';
    const out = await campaigns.sendTestEmail({ projectId: req.projectId, id: id(req), email });
    const data = {
      email: out.email,
      emailId: out.emailId,
      status: out.status,
      ...(out.error ? { error: out.error } : {}),
    };
    res.json({ ...wrapped(data), message: out.status === 'queued' ? 'Test email sent' : `Test email ${out.status}` });
  });

  r.get('/campaigns/:id/stats', secret, async (req, res) => {
    const out = await campaigns.getCampaignStats({ projectId: req.projectId, id: id(req) });
    res.json(campaignStatsJson(out.stats!));
  });

  r.get('/analytics/top-campaigns', secret, async (req, res) => {
    const out = await campaigns.listTopCampaigns({
      projectId: req.projectId,
      metric: stringParam(req.query, 'metric') ?? '',
      limit: stringParam(req.query, 'limit') ?? '',
    });
    res.json({ metric: out.metric, data: out.campaigns.map(campaignStatsJson) });
  });

  r.get('/analytics/campaign-stats', secret, async (req, res) => {
    const out = await campaigns.listCampaignStats({
      projectId: req.projectId,
      page: stringParam(req.query, 'page') ?? '',
      pageSize: stringParam(req.query, 'pageSize') ?? '',
    });
    res.json({
      data: out.campaigns.map(campaignStatsJson),
      page: out.page,
      pageSize: out.pageSize,
      total: Number(out.total),
      totalPages: out.totalPages,
    });
  });

  return r;
}
