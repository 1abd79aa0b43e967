import type { Client } from '@connectrpc/connect';
import { type MessagingService, SendSource } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { EmailCapPort, MessagingPort, TemplateCheckPort } from './domain/ports.js';

/** The messaging service as the campaigns domain's MessagingPort. */
export function messagingPort(
  messaging: Client<typeof MessagingService>,
): MessagingPort & EmailCapPort & TemplateCheckPort {
  return {
    async checkTemplates(projectId, subject, body) {
      await messaging.previewTemplate({ projectId, subject, body, parseOnly: true });
    },
    async senderVerified(projectId, from, forSending = false) {
      return (await messaging.checkSender({ projectId, from, forSending })).verified;
    },
    async emailAllowance(projectId, emails) {
      const r = await messaging.checkEmailAllowance({ projectId, emails: BigInt(emails) });
      return { allowed: r.allowed, used: Number(r.used), ...(r.limit !== undefined ? { limit: Number(r.limit) } : {}) };
    },
    async queue(projectId, content, recipients, origin) {
      const r = await messaging.queueEmails({
        projectId,
        content: {
          subject: content.subject,
          body: content.body,
          from: { email: content.from, ...(content.fromName ? { name: content.fromName } : {}) },
          ...(content.replyTo ? { replyTo: content.replyTo } : {}),
          type: content.type,
        },
        recipients: recipients.map((x) => ({
          contactId: x.contactId,
          email: x.email,
          name: '',
          subscribed: x.subscribed,
          variables: x.variables as never,
          dedupeKey: x.dedupeKey ?? '',
        })),
        // A test is waited for by a person: it goes ahead of campaign mail.
        source: origin.test ? SendSource.TRANSACTIONAL : SendSource.CAMPAIGN,
        campaignId: origin.campaignId,
        test: origin.test,
      });
      return r.emails.map((e) => ({ contactId: e.contactId, emailId: e.emailId, status: e.status, error: e.error }));
    },
  };
}
