import { Router, type RequestHandler } from 'express';
import type { Client } from '@connectrpc/connect';
import { AppError } from '@svc/lib/errors';
import type { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { KeyGuards } from '../http/guards.js';
import { boolField, objectBody, stringField } from '../http/body.js';
import { wrapped } from '../http/envelope.js';
import { limitParam, rangeParam, stringParam } from '../http/query.js';
import { eventJson } from './contacts-json.js';
import { dataValue } from './contact-data.js';

/** The window of GET /events/stats (the contacts service applies the same range). */
const EVENT_STATS_DAYS = { def: 30, min: 1, max: 3650 };
/** `/v1/track` (public key), its dashboard twin `/events/track`, and the events endpoints. */
export function eventsRouter(contacts: Client<typeof ContactsService>, guards: KeyGuards): Router {
  const r = Router();
  const secret = guards.secret;

  const track = (keyed: RequestHandler): RequestHandler[] => [
    keyed,
    async (req, res) => {
      const body = objectBody(req.body);
      if (body.event !== undefined && typeof body.event !== 'string') {
        throw new AppError({
          code: 'VALIDATION_ERROR',
          status: 422,
          message: 'Validation failed',
          errors: [{ field: 'event', message: 'event must be a string', code: 'invalid_type', received: body.event }],
        });
      }
      const out = await contacts.trackEvent({
        projectId: req.projectId,
        email: stringField(body, 'email') ?? '',
        event: typeof body.event === 'string' ? body.event : '',
        subscribed: boolField(body, 'subscribed'),
        data: dataValue(body),
      });
      res.json(
        wrapped({
          contact: out.contactId,
          event: out.eventId,
          timestamp: new Date(
            Number(out.timestamp!.seconds) * 1000 + Math.floor(out.timestamp!.nanos / 1e6),
          ).toISOString(),
        }),
      );
    },
  ];
  r.post('/v1/track', ...track(guards.public));
  r.post('/events/track', ...track(secret));

  r.get('/events', secret, async (req, res) => {
    const out = await contacts.listEvents({
      projectId: req.projectId,
      limit: limitParam(req.query),
      cursor: stringParam(req.query, 'cursor') ?? '',
      name: stringParam(req.query, 'name') ?? '',
    });
    res.json({ data: out.events.map(eventJson), cursor: out.cursor, hasMore: out.hasMore });
  });

  r.get('/events/stats', secret, async (req, res) => {
    const days = rangeParam(req.query, 'days', EVENT_STATS_DAYS);
    const s = await contacts.getEventStats({ projectId: req.projectId, days });
    res.json({
      total: Number(s.total),
      last24h: Number(s.last24h),
      events: s.names.map((n) => ({
        name: n.name,
        count: Number(n.count),
        contacts: Number(n.contacts),
        lastSeen: n.lastSeen ? new Date(Number(n.lastSeen.seconds) * 1000).toISOString() : null,
      })),
    });
  });

  r.get('/events/names', secret, async (req, res) => {
    res.json((await contacts.listEventNames({ projectId: req.projectId })).names);
  });

  r.get('/events/contact/:contactId', secret, async (req, res) => {
    const out = await contacts.listEvents({
      projectId: req.projectId,
      limit: limitParam(req.query, 100, 100),
      contactId: String(req.params.contactId),
      cursor: stringParam(req.query, 'cursor') ?? '',
    });
    res.json({ data: out.events.map(eventJson), cursor: out.cursor, hasMore: out.hasMore });
  });

  r.delete('/events/:eventName', secret, async (req, res) => {
    const out = await contacts.deleteEvents({ projectId: req.projectId, name: String(req.params.eventName) });
    res.json({ event: String(req.params.eventName), deleted: Number(out.deleted) });
  });

  return r;
}
