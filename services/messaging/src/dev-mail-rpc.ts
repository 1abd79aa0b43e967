import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter } from '@connectrpc/connect';
import { notFound } from '@svc/lib/errors';
import { DevMailService } from '@svc/proto/svc/messaging/v1/dev_mail_pb';
import type { DevMail, DevMailMessage } from './domain/dev-mail.js';

const summary = (m: DevMailMessage) => ({
  id: m.id,
  emailId: m.emailId,
  projectId: m.projectId,
  mailFrom: m.mailFrom,
  rcptTo: m.rcptTo,
  from: m.from,
  to: m.to,
  subject: m.subject,
  receivedAt: timestampFromDate(m.receivedAt),
  size: m.size,
  attachmentCount: m.attachmentCount,
});

/** DevMailService (proto/svc/messaging/v1/dev_mail.proto): the mail viewer's reads; only with the local sink. */
export function devMailRoutes(devMail: DevMail | undefined) {
  return (router: ConnectRouter) =>
    router.service(DevMailService, {
      async listSinkMail(req) {
        if (!devMail) return { messages: [], enabled: false };
        const limit = Math.min(Math.max(req.limit || 50, 1), 200);
        const mail = await devMail.list(req.projectIds, req.recipient, limit);
        return { messages: mail.map((m) => ({ ...summary(m), text: m.text })), enabled: true };
      },
      async getSinkMail(req) {
        if (!devMail) return { enabled: false };
        const m = await devMail.get(req.id, req.projectIds, req.recipient);
        if (!m) throw notFound('Message', req.id);
        return {
          enabled: true,
          message: {
            ...summary(m),
            text: m.text,
            html: m.html,
            headers: m.headers,
            attachments: m.attachments.map((a) => ({ ...a, size: BigInt(a.size) })),
            raw: m.raw,
          },
        };
      },
    });
}

/** The messaging service's routes and DevMailService's, on one server. */
export function withDevMailRoutes(devMail: DevMail | undefined, routes: (router: ConnectRouter) => void) {
  return (router: ConnectRouter) => {
    routes(router);
    devMailRoutes(devMail)(router);
  };
}
