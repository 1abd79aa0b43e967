import type { JsonObject } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import { type MessagingService, SendSource } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { isAppError } from '@svc/lib/errors';
import type { MailPort, TemplatesPort } from './domain/ports.js';

/** The messaging service as the workflows domain's MailPort (QueueEmails, workflow priority). */
export function mailPort(messaging: Client<typeof MessagingService>): MailPort {
  return {
    async queue(projectId, workflowId, c, to) {
      const from = typeof c.from === 'string' ? { email: c.from, name: c.fromName } : c.from;
      const r = await messaging.queueEmails({
        projectId,
        source: SendSource.WORKFLOW,
        workflowId,
        content: {
          templateId: c.templateId,
          subject: c.subject,
          body: c.body,
          from: from && { email: from.email, name: from.name ?? c.fromName },
          replyTo: c.replyTo,
        },
        recipients: to.map((t) => ({
          contactId: t.contact.id,
          email: t.contact.email,
          subscribed: t.contact.subscribed,
          variables: t.variables as JsonObject,
          dedupeKey: t.dedupeKey,
        })),
      });
      return to.map((_, i) => {
        const e = r.emails[i];
        return { status: e?.status ?? 'failed', emailId: e?.emailId ?? '', error: e?.error || undefined };
      });
    },
  };
}

/** The messaging service as the workflows domain's TemplatesPort (GetTemplate, scoped to the project). */
export function templatesPort(messaging: Client<typeof MessagingService>): TemplatesPort {
  return {
    async exists(projectId, id) {
      try {
        await messaging.getTemplate({ projectId, id });
        return true;
      } catch (err) {
        if (isAppError(err) && err.status === 404) return false;
        throw err;
      }
    },
  };
}
