import type { Client } from '@connectrpc/connect';
import type { Router } from 'express';
import type { EmailSummary, MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { KeyGuards } from '../http/guards.js';
import { stringParam } from '../http/query.js';
import { iso } from './identity-json.js';
import { z } from 'zod';
import { ApiRouter, cursorPage, id, isoDate, stringQuery } from '../http/api.js';

const EmailDoc = z
  .object({
    id,
    contactId: id,
    to: z.string(),
    from: z.string(),
    subject: z.string(),
    status: z.string().openapi({ example: 'delivered' }),
    reason: z.string().nullable(),
    type: z.string(),
    templateId: id.nullable(),
    campaignId: id.nullable(),
    workflowId: id.nullable(),
    attemptCount: z.number().int(),
    opens: z.number().int(),
    clicks: z.number().int(),
    test: z.boolean(),
    lastError: z.string().nullable(),
    messageId: z.string(),
    createdAt: isoDate.nullable(),
    sentAt: isoDate.nullable(),
  })
  .openapi('Email');
const EmailDetail = EmailDoc.extend({
  attempts: z.array(
    z.object({
      attempt: z.number().int(),
      outcome: z.string(),
      smtpCode: z.number().int().nullable(),
      smtpResponse: z.string().nullable(),
      at: isoDate.nullable(),
    }),
  ),
  timeline: z.array(z.object({ type: z.string(), at: isoDate.nullable(), detail: z.string().optional() })),
}).openapi('EmailDetail');

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
  const r = new ApiRouter();

  r.get(
    '/emails',
    {
      summary: "The project's emails, newest first (cursor pages)",
      tag: 'Sending',
      auth: 'secret',
      query: z.object({
        limit: stringQuery(),
        cursor: stringQuery(),
        status: stringQuery('Comma-separated statuses'),
        contactId: stringQuery(),
        templateId: stringQuery(),
        campaignId: stringQuery(),
        from: stringQuery('Created at or after (date-time)'),
        to: stringQuery('Created before (date-time)'),
      }),
      responses: { 200: cursorPage(EmailDoc).extend({ total: z.number().int() }) },
      errors: [400, 422],
    },
    guards.secret,
    async (req, res) => {
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
    },
  );

  r.get(
    '/emails/:id',
    {
      summary: 'An email: status, delivery attempts with SMTP answers, lifecycle timeline',
      tag: 'Sending',
      auth: 'secret',
      responses: { 200: EmailDetail },
      errors: [404],
    },
    guards.secret,
    async (req, res) => {
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
    },
  );

  return r.router;
}
