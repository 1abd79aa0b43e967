import type { Client } from '@connectrpc/connect';
import { Router } from 'express';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { Authenticator } from '../http/auth.js';
import { limitParam } from '../http/query.js';
import { iso } from './identity-json.js';

/** Embedded mode only: what the local SMTP sink received, so a newcomer sees the mail they sent. */
export function devMailRouter(messaging: Client<typeof MessagingService>, auth: Authenticator): Router {
  const r = Router();
  r.get('/dev/mail', auth.session(), async (req, res) => {
    const out = await messaging.listDevMail({ limit: limitParam(req.query, 50, 200) });
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
