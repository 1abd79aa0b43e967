import type { JsonObject } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import { type MessagingService, SendSource } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { isAppError } from '@svc/lib/errors';
import type { MailChecksPort, MailPort } from './domain/ports.js';

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
          workflowDepth: t.chainDepth,
        })),
      });
      return to.map((_, i) => {
        const e = r.emails[i];
        return { status: e?.status ?? 'failed', emailId: e?.emailId ?? '', error: e?.error || undefined };
      });
    },
  };
}

/** The messaging service as the workflows domain's MailChecksPort (GetTemplate, PreviewTemplate, CheckSender). */
export function mailChecksPort(messaging: Client<typeof MessagingService>): MailChecksPort {
  return {
    async templateExists(projectId, id) {
      try {
        await messaging.getTemplate({ projectId, id });
        return true;
      } catch (err) {
        if (isAppError(err) && err.status === 404) return false;
        throw err;
      }
    },
    async templateExistsUnlessDeleting(projectId, id) {
      try {
        await messaging.getTemplate({ projectId, id, unlessDeleting: true });
        return true;
      } catch (err) {
        if (isAppError(err) && err.status === 404) return false;
        throw err;
      }
    },
    async checkContent(projectId, subject, body) {
      await messaging.previewTemplate({ projectId, subject, body, parseOnly: true });
    },
    async senderVerified(projectId, from) {
      return (await messaging.checkSender({ projectId, from })).verified;
    },
  };
}
