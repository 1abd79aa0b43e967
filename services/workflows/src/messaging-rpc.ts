import type { JsonObject } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import { type MessagingService, SendSource } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { MailPort } from './domain/ports.js';

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
        recipients: [
          {
            contactId: to.contact.id,
            email: to.contact.email,
            subscribed: to.contact.subscribed,
            variables: to.variables as JsonObject,
            dedupeKey: to.dedupeKey,
          },
        ],
      });
      const e = r.emails[0];
      return { status: e?.status ?? 'failed', emailId: e?.emailId ?? '', error: e?.error || undefined };
    },
  };
}
