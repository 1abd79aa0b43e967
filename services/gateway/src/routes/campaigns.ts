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
import type { Router, Request } from 'express';
import { objectBody, stringField } from '../http/body.js';
import { wrapped } from '../http/envelope.js';
import type { KeyGuards } from '../http/guards.js';
import { messageFromJson } from '../http/json-message.js';
import { stringParam } from '../http/query.js';
import { iso } from './identity-json.js';
import { z } from 'zod';
import { ApiRouter, filterCondition, id as uuid, isoDate, stringQuery, wrappedSchema } from '../http/api.js';

const Status = z.enum(['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED']);
const CampaignDoc = z
  .object({
    id: uuid,
    name: z.string(),
    description: z.string(),
    subject: z.string(),
    body: z.string(),
    from: z.string(),
    fromName: z.string(),
    replyTo: z.string(),
    type: z.enum(['TRANSACTIONAL', 'MARKETING', 'HEADLESS']),
    status: Status,
    audienceType: z.enum(['ALL', 'SEGMENT', 'FILTERED']),
    segmentId: uuid.nullable(),
    audienceCondition: filterCondition.nullable(),
    scheduledFor: isoDate.nullable(),
    totalRecipients: z.number().int(),
    sentCount: z.number().int(),
    deliveredCount: z.number().int(),
    openedCount: z.number().int(),
    clickedCount: z.number().int(),
    bouncedCount: z.number().int(),
    projectId: uuid,
    sentAt: isoDate.nullable(),
    createdAt: isoDate.nullable(),
    updatedAt: isoDate.nullable(),
  })
  .openapi('Campaign');
const CampaignInput = z.object({
  name: z.string().min(1),
  description: z.string().nullable().optional(),
  subject: z.string().min(1).max(998),
  body: z.string().min(1),
  from: z.string().email(),
  fromName: z.string().nullable().optional(),
  replyTo: z.string().email().nullable().optional(),
  type: z.enum(['TRANSACTIONAL', 'MARKETING', 'HEADLESS']).optional(),
  audienceType: z.enum(['ALL', 'SEGMENT', 'FILTERED']),
  segmentId: uuid.nullable().optional().openapi({ description: 'Required for SEGMENT' }),
  audienceCondition: filterCondition.nullable().optional().openapi({ description: 'Required for FILTERED' }),
});
const n = z.number().int();
const CampaignStatsDoc = z
  .object({
    campaignId: uuid,
    name: z.string(),
    status: Status,
    sentAt: isoDate.nullable(),
    createdAt: isoDate.nullable(),
    totalRecipients: n,
    pending: n,
    queued: n,
    suppressed: n,
    failed: n,
    sent: n,
    delivered: n,
    opened: n,
    clicked: n,
    bounced: n,
    complained: n,
    openRate: z.number(),
    clickRate: z.number(),
    deliveryRate: z.number(),
    bounceRate: z.number(),
    lastError: z.string().nullable(),
  })
  .openapi('CampaignStats');
const Moved = wrappedSchema(
  z.object({ id: uuid, name: z.string(), status: Status, scheduledFor: isoDate.nullable() }),
).extend({ message: z.string() });
const pages = { page: z.number().int(), pageSize: z.number().int(), total: n, totalPages: z.number().int() };
const CAMPAIGN_ID = z.object({ id: uuid.openapi({ description: 'Campaign id' }) });

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
  const r = new ApiRouter();
  const secret = guards.secret;
  const id = (req: Request) => String(req.params.id);

  r.get(
    '/campaigns',
    {
      summary: 'List campaigns (numbered pages)',
      tag: 'Campaigns',
      auth: 'secret',
      query: z.object({
        page: stringQuery(),
        pageSize: stringQuery(),
        status: Status.optional(),
        search: stringQuery(),
        sort: stringQuery(),
        dir: z.enum(['asc', 'desc']).optional(),
      }),
      responses: { 200: z.object({ data: z.array(CampaignDoc), ...pages }) },
    },
    secret,
    async (req, res) => {
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
    },
  );

  r.post(
    '/campaigns',
    {
      summary: 'Create a campaign (DRAFT)',
      tag: 'Campaigns',
      auth: 'secret',
      body: CampaignInput,
      responses: { 201: wrappedSchema(CampaignDoc) },
      errors: [403, 404],
    },
    secret,
    async (req, res) => {
      const out = await campaigns.createCampaign({ projectId: req.projectId, fields: campaignFields(req.body) });
      res.status(201).json(wrapped(campaignJson(out.campaign!)));
    },
  );

  r.get(
    '/campaigns/:id',
    {
      summary: 'A campaign',
      tag: 'Campaigns',
      auth: 'secret',
      params: CAMPAIGN_ID,
      responses: { 200: CampaignDoc },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(campaignJson((await campaigns.getCampaign({ projectId: req.projectId, id: id(req) })).campaign!));
    },
  );

  r.put(
    '/campaigns/:id',
    {
      summary: 'Update a DRAFT or SCHEDULED campaign',
      tag: 'Campaigns',
      auth: 'secret',
      params: CAMPAIGN_ID,
      body: CampaignInput.partial(),
      responses: { 200: CampaignDoc },
      errors: [403, 404, 409],
    },
    secret,
    async (req, res) => {
      const fields = campaignFields(req.body);
      const out = await campaigns.updateCampaign({ projectId: req.projectId, id: id(req), fields });
      res.json(campaignJson(out.campaign!));
    },
  );

  r.delete(
    '/campaigns/:id',
    {
      summary: 'Delete a campaign that is not sending',
      tag: 'Campaigns',
      auth: 'secret',
      params: CAMPAIGN_ID,
      responses: { 204: null },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      await campaigns.deleteCampaign({ projectId: req.projectId, id: id(req) });
      res.status(204).end();
    },
  );

  r.post(
    '/campaigns/:id/duplicate',
    {
      summary: 'Copy a campaign as a new DRAFT',
      tag: 'Campaigns',
      auth: 'secret',
      params: CAMPAIGN_ID,
      responses: { 201: CampaignDoc },
      errors: [404],
    },
    secret,
    async (req, res) => {
      const out = await campaigns.duplicateCampaign({ projectId: req.projectId, id: id(req) });
      res.status(201).json(campaignJson(out.campaign!));
    },
  );

  r.post(
    '/campaigns/:id/send',
    {
      summary: 'Send now, or schedule with scheduledFor',
      tag: 'Campaigns',
      auth: 'secret',
      params: CAMPAIGN_ID,
      body: z.object({
        scheduledFor: z
          .union([isoDate, z.number().int()])
          .nullable()
          .optional()
          .openapi({ description: 'Date-time or epoch milliseconds; absent or null: now' }),
      }),
      bodyRequired: false,
      responses: { 200: Moved },
      errors: [400, 404, 409],
    },
    secret,
    async (req, res) => {
      const at = scheduledFor(objectBody(req.body));
      const out = await campaigns.sendCampaign({ projectId: req.projectId, id: id(req), scheduledFor: at });
      res.json({ ...wrapped(moveJson(out.campaign!)), message: out.message });
    },
  );

  r.post(
    '/campaigns/:id/cancel',
    {
      summary: 'Cancel a scheduled or sending campaign',
      tag: 'Campaigns',
      auth: 'secret',
      params: CAMPAIGN_ID,
      responses: { 200: Moved },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await campaigns.cancelCampaign({ projectId: req.projectId, id: id(req) });
      res.json({ ...wrapped(moveJson(out.campaign!)), message: out.message });
    },
  );

  r.post(
    '/campaigns/:id/test',
    {
      summary: 'Send a test of the campaign to one address',
      tag: 'Campaigns',
      auth: 'secret',
      params: CAMPAIGN_ID,
      body: z.object({ email: z.string().email() }),
      responses: {
        200: wrappedSchema(
          z.object({ email: z.string(), emailId: uuid, status: z.string(), error: z.string().optional() }),
        ).extend({ message: z.string() }),
      },
      errors: [403, 404],
    },
    secret,
    async (req, res) => {
      const email = stringField(objectBody(req.body), 'email') ?? '';
      const out = await campaigns.sendTestEmail({ projectId: req.projectId, id: id(req), email });
      const data = {
        email: out.email,
        emailId: out.emailId,
        status: out.status,
        ...(out.error ? { error: out.error } : {}),
      };
      res.json({ ...wrapped(data), message: out.status === 'queued' ? 'Test email sent' : `Test email ${out.status}` });
    },
  );

  r.get(
    '/campaigns/:id/stats',
    {
      summary: 'Delivery and engagement counts of a campaign',
      tag: 'Campaigns',
      auth: 'secret',
      params: CAMPAIGN_ID,
      responses: { 200: CampaignStatsDoc },
      errors: [404],
    },
    secret,
    async (req, res) => {
      const out = await campaigns.getCampaignStats({ projectId: req.projectId, id: id(req) });
      res.json(campaignStatsJson(out.stats!));
    },
  );

  r.get(
    '/analytics/top-campaigns',
    {
      summary: 'Campaigns ranked by a metric',
      tag: 'Analytics',
      auth: 'secret',
      query: z.object({ metric: stringQuery('openRate, clickRate, sent, ...'), limit: stringQuery() }),
      responses: { 200: z.object({ metric: z.string(), data: z.array(CampaignStatsDoc) }) },
      errors: [400],
    },
    secret,
    async (req, res) => {
      const out = await campaigns.listTopCampaigns({
        projectId: req.projectId,
        metric: stringParam(req.query, 'metric') ?? '',
        limit: stringParam(req.query, 'limit') ?? '',
      });
      res.json({ metric: out.metric, data: out.campaigns.map(campaignStatsJson) });
    },
  );

  r.get(
    '/analytics/campaign-stats',
    {
      summary: 'Stats of every campaign (numbered pages)',
      tag: 'Analytics',
      auth: 'secret',
      query: z.object({ page: stringQuery(), pageSize: stringQuery() }),
      responses: { 200: z.object({ data: z.array(CampaignStatsDoc), ...pages }) },
    },
    secret,
    async (req, res) => {
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
    },
  );

  return r.router;
}
