import type { Client } from '@connectrpc/connect';
import type { Router } from 'express';
import type { CampaignsService } from '@svc/proto/svc/campaigns/v1/campaigns_pb';
import type { SegmentsService } from '@svc/proto/svc/segments/v1/segments_pb';
import type { WorkflowsService, WorkflowUsage } from '@svc/proto/svc/workflows/v1/workflows_pb';
import type { KeyGuards } from '../http/guards.js';
import { z } from 'zod';
import { ApiRouter, id } from '../http/api.js';

const Ref = z.object({ id, name: z.string() });
const References = z.object({
  segments: z.array(Ref),
  campaigns: z.array(Ref.extend({ status: z.string() })),
  workflows: z.array(Ref.extend({ steps: z.array(Ref.extend({ type: z.string() })) })),
});

/** The services whose stored conditions can reference a contact field or an event name. */
export interface UsageSources {
  segments: Client<typeof SegmentsService>;
  workflows: Client<typeof WorkflowsService>;
  campaigns: Client<typeof CampaignsService>;
}

/** Workflow step references grouped by workflow: `{id, name, steps: [{id, name, type}]}`. */
export function workflowRefs(usages: WorkflowUsage[]) {
  const byId = new Map<string, { id: string; name: string; steps: { id: string; name: string; type: string }[] }>();
  for (const u of usages) {
    const w = byId.get(u.workflowId) ?? { id: u.workflowId, name: u.workflowName, steps: [] };
    w.steps.push({ id: u.stepId, name: u.stepName, type: u.stepType });
    byId.set(u.workflowId, w);
  }
  return [...byId.values()];
}

/** Standard contact fields, named as GET /contacts/fields names them; any other name is read as `data.<name>`. */
const STANDARD_FIELDS = new Set(['email', 'subscribed', 'createdAt', 'updatedAt']);

/** `plan` and `data.plan` are the same custom field; `email` is the standard one. */
export const fieldName = (raw: string) => (STANDARD_FIELDS.has(raw) || raw.startsWith('data.') ? raw : `data.${raw}`);

interface Ref {
  id: string;
  name: string;
}

/**
 * Who references a field or an event, asked of each source in parallel (one failing source is a 503, as any
 * dependency): segments, campaigns (audienceCondition) and workflows (trigger, CONDITION and WAIT_FOR_EVENT
 * steps), each filling its own list.
 */
async function references(
  sources: UsageSources,
  projectId: string,
  ref: { field: string } | { eventName: string },
): Promise<{ segments: Ref[]; campaigns: Ref[]; workflows: Ref[] }> {
  const [segments, workflows, campaigns] = await Promise.all([
    sources.segments.findSegmentsUsing({ projectId, ...ref }),
    sources.workflows.findWorkflowsUsing({ projectId, ...ref }),
    sources.campaigns.listCampaignsUsing({ projectId, ...ref }),
  ]);
  return {
    segments: segments.segments.map((s) => ({ id: s.id, name: s.name })),
    campaigns: campaigns.campaigns.map((c) => ({ id: c.id, name: c.name, status: c.status })),
    workflows: workflowRefs(workflows.usages),
  };
}

/** GET /contacts/fields/{field}/usage and GET /events/{eventName}/usage (GET /templates/{id}/usage is messaging's). */
export function usageRouter(sources: UsageSources, guards: KeyGuards): Router {
  const r = new ApiRouter();
  const secret = guards.secret;

  r.get(
    '/contacts/fields/:field/usage',
    {
      summary: 'Segments, campaigns and workflows whose conditions read a contact field',
      tag: 'Contacts',
      auth: 'secret',
      responses: { 200: References.extend({ field: z.string() }) },
    },
    secret,
    async (req, res) => {
      const field = fieldName(String(req.params.field));
      res.json({ field, ...(await references(sources, req.projectId, { field })) });
    },
  );

  r.get(
    '/events/:eventName/usage',
    {
      summary: 'Segments, campaigns and workflows that reference an event',
      tag: 'Events',
      auth: 'secret',
      responses: { 200: References.extend({ event: z.string() }) },
    },
    secret,
    async (req, res) => {
      const event = String(req.params.eventName);
      res.json({ event, ...(await references(sources, req.projectId, { eventName: event })) });
    },
  );

  return r.router;
}
