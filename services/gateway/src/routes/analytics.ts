import type { Client } from '@connectrpc/connect';
import type { Router } from 'express';
import type { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import type { KeyGuards } from '../http/guards.js';
import { limitParam, rangeParam, stringParam } from '../http/query.js';
import { iso } from './identity-json.js';
import { z } from 'zod';
import { ApiRouter, isoDate, limitQuery, stringQuery } from '../http/api.js';

const Bucket = z.object({
  date: isoDate.nullable(),
  sent: z.number().int(),
  delivered: z.number().int(),
  opened: z.number().int(),
  clicked: z.number().int(),
  bounced: z.number().int(),
});

/** The window of GET /analytics/top-events, as GET /events/stats. */
const TOP_EVENTS_DAYS = { def: 30, min: 1, max: 3650 };
const TOP_EVENTS_LIMIT = { def: 10, max: 100 };

const METRICS = ['sent', 'delivered', 'opened', 'clicked', 'bounced'] as const;

/**
 * GET /analytics/timeseries (messaging's email lifecycle per UTC day or hour) and /analytics/top-events (contacts'
 * tracked events). The campaign analytics (/analytics/top-campaigns, /analytics/campaign-stats) live in campaigns.ts.
 */
export function analyticsRouter(
  messaging: Client<typeof MessagingService>,
  contacts: Client<typeof ContactsService>,
  guards: KeyGuards,
): Router {
  const r = new ApiRouter();
  const secret = guards.secret;

  r.get(
    '/analytics/timeseries',
    {
      summary: 'Email lifecycle counts per UTC day or hour',
      tag: 'Analytics',
      auth: 'secret',
      query: z.object({
        from: stringQuery('Start (date-time)'),
        to: stringQuery('End (date-time)'),
        interval: z.enum(['day', 'hour']).optional(),
        campaignId: stringQuery('Only the emails of this campaign'),
      }),
      responses: {
        200: z.object({
          interval: z.string(),
          from: isoDate.nullable(),
          to: isoDate.nullable(),
          data: z.array(Bucket),
          totals: Bucket.omit({ date: true }),
        }),
      },
      errors: [400],
    },
    secret,
    async (req, res) => {
      // Messaging validates (400 naming the parameter), applies the defaults and caps the range.
      const out = await messaging.getEmailTimeseries({
        projectId: req.projectId,
        from: stringParam(req.query, 'from') ?? '',
        to: stringParam(req.query, 'to') ?? '',
        interval: stringParam(req.query, 'interval') ?? '',
        campaignId: stringParam(req.query, 'campaignId') ?? '',
      });
      const data = out.buckets.map((b) => ({
        date: iso(b.start),
        sent: Number(b.sent),
        delivered: Number(b.delivered),
        opened: Number(b.opened),
        clicked: Number(b.clicked),
        bounced: Number(b.bounced),
      }));
      const totals = Object.fromEntries(METRICS.map((m) => [m, data.reduce((n, b) => n + b[m], 0)]));
      res.json({ interval: out.interval, from: iso(out.from), to: iso(out.to), data, totals });
    },
  );

  r.get(
    '/analytics/top-events',
    {
      summary: 'The most tracked events over a window',
      tag: 'Analytics',
      auth: 'secret',
      query: z.object({ days: z.coerce.number().int().min(1).max(3650).optional(), limit: limitQuery(10) }),
      responses: {
        200: z.object({
          days: z.number().int(),
          data: z.array(
            z.object({
              name: z.string(),
              count: z.number().int(),
              contacts: z.number().int(),
              lastSeen: isoDate.nullable(),
            }),
          ),
        }),
      },
      errors: [422],
    },
    secret,
    async (req, res) => {
      const days = rangeParam(req.query, 'days', TOP_EVENTS_DAYS);
      const limit = limitParam(req.query, TOP_EVENTS_LIMIT.def, TOP_EVENTS_LIMIT.max);
      const out = await contacts.getTopEvents({ projectId: req.projectId, days, limit });
      res.json({
        days,
        data: out.names.map((n) => ({
          name: n.name,
          count: Number(n.count),
          contacts: Number(n.contacts),
          lastSeen: iso(n.lastSeen),
        })),
      });
    },
  );

  return r.router;
}
