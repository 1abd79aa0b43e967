import type { Client } from '@connectrpc/connect';
import { Router } from 'express';
import type { EmailSummary, MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { KeyGuards } from '../http/guards.js';
import { stringParam } from '../http/query.js';
import { iso } from './identity-json.js';

const emailJson = (e: EmailSummary) => ({
  id: e.id,
  contactId: e.contactId,
  to: e.to,
  from: e.from,
  subject: e.subject,
  status: e.status,
  reason: e.reason || null,
  type: e.type,
  templateId: e.templateId || null,
  campaignId: e.campaignId || null,
  workflowId: e.workflowId || null,
  attemptCount: e.attempts,
  opens: e.openCount,
  clicks: e.clickCount,
  test: e.test,
  lastError: e.lastError || null,
  messageId: e.messageId,
  createdAt: iso(e.createdAt),
  sentAt: iso(e.sentAt),
});

/**
 * GET /emails (a project's messages, newest first, SPEC.md cursor list) and GET /emails/{id} (status, delivery
 * attempts with the SMTP answers, lifecycle timeline). Messaging validates the filters (400/422) and scopes every
 * read to the key's project: another project's id is a 404.
 */
export function emailsRouter(messaging: Client<typeof MessagingService>, guards: KeyGuards): Router {
  const r = Router();

  r.get('/emails', guards.secret, async (req, res) => {
    const q = (name: string) => stringParam(req.query, name) ?? '';
    const out = await messaging.listEmails({
      projectId: req.projectId,
      limit: q('limit'),
      cursor: q('cursor'),
      status: q('status'),
      contactId: q('contactId'),
      templateId: q('templateId'),
      campaignId: q('campaignId'),
      from: q('from'),
      to: q('to'),
    });
    res.json({ data: out.emails.map(emailJson), cursor: out.cursor, hasMore: out.hasMore, total: Number(out.total) });
  });

  r.get('/emails/:id', guards.secret, async (req, res) => {
    const out = await messaging.getEmail({ projectId: req.projectId, id: String(req.params.id) });
    res.json({
      ...emailJson(out.email!),
      attempts: out.attempts.map((a) => ({
        attempt: a.attempt,
        outcome: a.outcome,
        smtpCode: a.smtpCode || null,
        smtpResponse: a.smtpResponse || null,
        at: iso(a.at),
      })),
      timeline: out.timeline.map((t) => ({ type: t.type, at: iso(t.at), ...(t.detail ? { detail: t.detail } : {}) })),
    });
  });

  return r;
}
