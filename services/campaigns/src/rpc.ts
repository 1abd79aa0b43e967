import { create, fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { timestampFromDate, ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter } from '@connectrpc/connect';
import {
  CampaignRefSchema,
  CampaignSchema,
  CampaignsService,
  CampaignStatsSchema,
  type CampaignFields,
} from '@svc/proto/svc/campaigns/v1/campaigns_pb';
import type { CampaignInput } from './domain/campaign-input.js';
import type { Campaigns } from './domain/campaigns.js';
import type { CampaignStatsView } from './domain/stats.js';
import type { CampaignRow } from './store/campaign-row.js';

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);
/** `undefined` when the client sent no value (field omitted), JSON otherwise. */
const json = (v?: Value): JsonValue | undefined => (v === undefined ? undefined : toJson(ValueSchema, v));

const campaignPb = (c: CampaignRow) =>
  create(CampaignSchema, {
    id: c.id,
    projectId: c.project_id,
    name: c.name,
    description: c.description,
    subject: c.subject,
    body: c.body,
    from: c.from_email,
    fromName: c.from_name,
    replyTo: c.reply_to,
    type: c.type,
    status: c.status,
    audienceType: c.audience_type,
    segmentId: c.segment_id ?? '',
    audienceCondition:
      c.audience_condition === null ? undefined : fromJson(ValueSchema, c.audience_condition as JsonValue),
    scheduledFor: ts(c.scheduled_for),
    totalRecipients: BigInt(c.total_recipients),
    sentCount: BigInt(c.sent_count),
    deliveredCount: BigInt(c.delivered_count),
    openedCount: BigInt(c.opened_count),
    clickedCount: BigInt(c.clicked_count),
    bouncedCount: BigInt(c.bounced_count),
    sentAt: ts(c.sent_at),
    createdAt: timestampFromDate(c.created_at),
    updatedAt: timestampFromDate(c.updated_at),
  });

const refPb = (c: CampaignRow) =>
  create(CampaignRefSchema, { id: c.id, name: c.name, status: c.status, scheduledFor: ts(c.scheduled_for) });

const statsPb = (s: CampaignStatsView) =>
  create(CampaignStatsSchema, {
    ...s,
    sentAt: ts(s.sentAt),
    createdAt: timestampFromDate(s.createdAt),
    totalRecipients: BigInt(s.totalRecipients),
    pending: BigInt(s.pending),
    queued: BigInt(s.queued),
    suppressed: BigInt(s.suppressed),
    failed: BigInt(s.failed),
    sent: BigInt(s.sent),
    delivered: BigInt(s.delivered),
    opened: BigInt(s.opened),
    clicked: BigInt(s.clicked),
    bounced: BigInt(s.bounced),
    complained: BigInt(s.complained),
  });

const input = (f?: CampaignFields): CampaignInput => ({
  name: f?.name,
  description: f?.description,
  subject: f?.subject,
  body: f?.body,
  from: f?.from,
  fromName: f?.fromName,
  replyTo: f?.replyTo,
  type: f?.type,
  audienceType: f?.audienceType,
  segmentId: f?.segmentId,
  audienceCondition: json(f?.audienceCondition),
});

export function campaignsRoutes(campaigns: Campaigns) {
  return (router: ConnectRouter) =>
    router.service(CampaignsService, {
      async listCampaigns(req) {
        const r = await campaigns.list(req.projectId, {
          page: req.page || undefined,
          pageSize: req.pageSize || undefined,
          status: req.status || undefined,
          search: req.search || undefined,
          sort: req.sort || undefined,
          dir: req.dir || undefined,
        });
        return {
          campaigns: r.rows.map(campaignPb),
          total: BigInt(r.total),
          page: r.page,
          pageSize: r.pageSize,
          totalPages: r.totalPages,
        };
      },
      async createCampaign(req) {
        return { campaign: campaignPb(await campaigns.create(req.projectId, input(req.fields))) };
      },
      async getCampaign(req) {
        return { campaign: campaignPb(await campaigns.get(req.projectId, req.id)) };
      },
      async updateCampaign(req) {
        return { campaign: campaignPb(await campaigns.replace(req.projectId, req.id, input(req.fields))) };
      },
      async deleteCampaign(req) {
        await campaigns.remove(req.projectId, req.id);
        return {};
      },
      async duplicateCampaign(req) {
        return { campaign: campaignPb(await campaigns.duplicate(req.projectId, req.id)) };
      },
      async sendCampaign(req) {
        const r = await campaigns.send(req.projectId, req.id, req.scheduledFor);
        return { campaign: campaignPb(r.row), message: r.message };
      },
      async cancelCampaign(req) {
        const r = await campaigns.cancel(req.projectId, req.id);
        return { campaign: campaignPb(r.row), message: r.message };
      },
      async sendTestEmail(req) {
        return campaigns.sendTest(req.projectId, req.id, req.email);
      },
      async getCampaignStats(req) {
        return { stats: statsPb(await campaigns.stats(req.projectId, req.id)) };
      },
      async listCampaignsUsing(req) {
        const rows = await campaigns.using(req.projectId, {
          segmentId: req.segmentId || undefined,
          field: req.field || undefined,
          eventName: req.eventName || undefined,
          activeOnly: req.activeOnly,
        });
        return { campaigns: rows.map(refPb) };
      },
      async listUpcomingCampaigns(req) {
        return { campaigns: (await campaigns.upcoming(req.projectId, req.limit)).map(refPb) };
      },
      async listTopCampaigns(req) {
        const r = await campaigns.top(req.projectId, req.metric || undefined, req.limit || undefined);
        return { metric: r.metric, campaigns: r.campaigns.map(statsPb) };
      },
      async listCampaignStats(req) {
        const r = await campaigns.statsPage(req.projectId, req.page || undefined, req.pageSize || undefined);
        return { ...r, campaigns: r.campaigns.map(statsPb), total: BigInt(r.total) };
      },
    });
}
