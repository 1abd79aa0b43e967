import type { Client } from '@connectrpc/connect';
import { Router } from 'express';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { Authenticator } from '../http/auth.js';
import { limitParam } from '../http/query.js';
import { iso } from './identity-json.js';

interface DevMailClients {
  identity: Client<typeof IdentityService>;
  messaging: Client<typeof MessagingService>;
}

/**
 * Embedded mode only: what the local SMTP sink received, so a newcomer sees the mail they sent;
 * only the mail of the projects the signed-in user is a member of.
 */
export function devMailRouter(clients: DevMailClients, auth: Authenticator): Router {
  const r = Router();
  r.get('/dev/mail', auth.session(), async (req, res) => {
    const { projects } = await clients.identity.listProjects({ userId: req.userId });
    const projectIds = projects.map((p) => p.id);
    const out = await clients.messaging.listDevMail({ limit: limitParam(req.query, 50, 200), projectIds });
    res.json({
      enabled: out.enabled,
      data: out.messages.map((m) => ({
        id: m.id,
        from: m.from,
        to: m.to,
        subject: m.subject,
        text: m.text,
        html: m.html,
        headers: m.headers ?? {},
        receivedAt: iso(m.receivedAt),
        size: m.size,
      })),
    });
  });
  return r;
}
