import type { Client } from '@connectrpc/connect';
import type { Request } from 'express';
import { z } from 'zod';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { ApiRouter, id, isoDate } from '../http/api.js';
import type { Authenticator } from '../http/auth.js';
import { suspensionJson, wipeJson } from './identity-json.js';

export interface ProjectSafetySources {
  identity: Client<typeof IdentityService>;
  messaging: Client<typeof MessagingService>;
}

export const ProjectWipe = z
  .object({
    id,
    projectId: id,
    kind: z.enum(['reset', 'delete']),
    status: z.enum(['running', 'completed']),
    steps: z.array(
      z.object({
        service: z.string(),
        phase: z.number().int(),
        status: z.enum(['waiting', 'running', 'done']),
        doneAt: isoDate.nullable(),
      }),
    ),
    createdAt: isoDate.nullable(),
    completedAt: isoDate.nullable(),
  })
  .openapi('ProjectWipe');

const Suspension = z
  .object({
    id,
    metric: z.enum(['bounce_rate', 'complaint_rate']),
    rate: z.number(),
    threshold: z.number(),
    sent: z.number().int(),
    reason: z.string(),
    suspendedAt: isoDate.nullable(),
    liftedAt: isoDate.nullable(),
    liftedBy: id.nullable(),
  })
  .openapi('Suspension');

const SecurityState = z
  .object({
    projectId: id,
    status: z.enum(['active', 'suspended']),
    suspension: Suspension.nullable(),
    thresholds: z.object({
      bounceRate: z.number(),
      complaintRate: z.number(),
      minimumVolume: z.number().int(),
      judgedWindowDays: z.number().int(),
    }),
    windows: z.array(
      z.object({
        days: z.number().int(),
        sent: z.number().int(),
        bounced: z.number().int(),
        complained: z.number().int(),
        bounceRate: z.number(),
        complaintRate: z.number(),
      }),
    ),
    suspensions: z.array(Suspension),
  })
  .openapi('ProjectSecurity');

const PROJECT_ID = z.object({ id: id.openapi({ description: 'Project id' }) });

/**
 * Session routes of a project's safety (README "Project security and suspension", "Project reset and
 * deletion"): its sending reputation and suspensions, the owner's reinstatement, and the reset saga.
 * Identity answers membership first: another user's project is a 404, a member's reset a 403.
 */
export function projectSafetyRouter(sources: ProjectSafetySources, auth: Authenticator) {
  const r = new ApiRouter();
  const session = auth.session();
  const { identity, messaging } = sources;
  const target = (req: Request) => ({ userId: req.userId, projectId: String(req.params.id) });

  const security = async (req: Request) => {
    const { active, history } = await identity.getProjectSuspensions(target(req));
    const rep = await messaging.getSendingReputation({ projectId: String(req.params.id) });
    return {
      projectId: String(req.params.id),
      status: active ? ('suspended' as const) : ('active' as const),
      suspension: active ? suspensionJson(active) : null,
      thresholds: {
        bounceRate: rep.bounceThreshold,
        complaintRate: rep.complaintThreshold,
        minimumVolume: Number(rep.minimumVolume),
        judgedWindowDays: rep.judgedDays,
      },
      windows: rep.windows.map((w) => ({
        days: w.days,
        sent: Number(w.sent),
        bounced: Number(w.bounced),
        complained: Number(w.complained),
        bounceRate: w.bounceRate,
        complaintRate: w.complaintRate,
      })),
      suspensions: history.map(suspensionJson),
    };
  };
  const securityDoc = {
    summary: "The project's bounce and complaint rates (7 and 30 days), thresholds and suspensions (members)",
    tag: 'Projects',
    auth: 'session' as const,
    params: PROJECT_ID,
    responses: { 200: SecurityState },
    errors: [404],
  };
  r.get('/projects/:id/security', securityDoc, session, async (req, res) => {
    res.json(await security(req));
  });
  r.get('/users/@me/projects/:id/security', securityDoc, session, async (req, res) => {
    res.json(await security(req));
  });
  r.post(
    '/users/@me/projects/:id/security/reinstate',
    {
      summary: 'Lift the sending suspension (owner only); only mail sent from now on is judged again',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 200: SecurityState },
      errors: [403, 404, 409],
    },
    session,
    async (req, res) => {
      await identity.reinstateProject(target(req));
      res.json(await security(req));
    },
  );

  r.post(
    '/users/@me/projects/:id/reset',
    {
      summary: "Wipe the project's data in every service, keeping the project and its keys (owner only)",
      description: 'A saga (README "Project reset and deletion"): 202 with its progress; 409 while one runs.',
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 202: ProjectWipe },
      errors: [403, 404, 409],
    },
    session,
    async (req, res) => {
      res.status(202).json(wipeJson((await identity.resetProject(target(req))).wipe!));
    },
  );
  r.get(
    '/users/@me/projects/:id/reset',
    {
      summary: "Progress of the project's latest reset or deletion (a finished deletion: 404)",
      tag: 'Projects',
      auth: 'session',
      params: PROJECT_ID,
      responses: { 200: ProjectWipe },
      errors: [404],
    },
    session,
    async (req, res) => {
      res.json(wipeJson((await identity.getProjectWipe(target(req))).wipe!));
    },
  );

  return r.router;
}
