import type { Router, RequestHandler } from 'express';
import type { Client } from '@connectrpc/connect';
import type { CallBatcherOptions } from '@svc/lib/call-batcher';
import { AppError } from '@svc/lib/errors';
import type {
  ContactsService,
  TrackEventRequestSchema,
  TrackEventResponse,
} from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { coalescedCall } from '../http/coalesced-call.js';
import type { KeyGuards } from '../http/guards.js';
import { boolField, objectBody, stringField } from '../http/body.js';
import { sendJson, wrapped } from '../http/envelope.js';
import { limitParam, rangeParam, stringParam } from '../http/query.js';
import { eventJson } from './contacts-json.js';
import { dataValue } from './contact-data.js';
import { z } from 'zod';
import { ApiRouter, cursorPage, id, isoDate, json, limitQuery, stringQuery, wrappedSchema } from '../http/api.js';

const Event = z
  .object({
    id,
    name: z.string(),
    contactId: id,
    contactEmail: z.string().nullable(),
    data: json,
    createdAt: isoDate.nullable(),
  })
  .openapi('Event');
const TrackInput = z
  .object({
    event: z.string().openapi({ example: 'signed-up' }),
    email: z.string().email(),
    subscribed: z.boolean().optional(),
    data: json.optional(),
  })
  .openapi('TrackRequest');
const Tracked = wrappedSchema(z.object({ contact: id, event: id, timestamp: isoDate }));
const EventPage = cursorPage(Event);

/** The window of GET /events/stats (the contacts service applies the same range). */
const EVENT_STATS_DAYS = { def: 30, min: 1, max: 3650 };
type Track = MessageInitShape<typeof TrackEventRequestSchema>;

/**
 * Tracks go to contacts in batches: one TrackEvents call carries the tracks of every request that
 * arrived within `windowMs`, each with its own request id and trace, each answered (or failed) alone.
 */
const trackSender = (contacts: Client<typeof ContactsService>, opts: CallBatcherOptions) =>
  coalescedCall<Track, TrackEventResponse>({
    ...opts,
    unary: (t) => contacts.trackEvent(t),
    batch: async (items) =>
      (await contacts.trackEvents({ items: items.map(({ request, ...from }) => ({ event: request, ...from })) }))
        .results,
    ok: 'tracked',
  });

/** The last handler of `/v1/track` and `/events/track`: the body to one track, its answer in the envelope. */
export function trackHandler(contacts: Client<typeof ContactsService>, trackBatch: CallBatcherOptions): RequestHandler {
  const trackEvent = trackSender(contacts, trackBatch);
  return async (req, res) => {
    const body = objectBody(req.body);
    if (body.event !== undefined && typeof body.event !== 'string') {
      throw new AppError({
        code: 'VALIDATION_ERROR',
        status: 422,
        message: 'Validation failed',
        errors: [{ field: 'event', message: 'event must be a string', code: 'invalid_type', received: body.event }],
      });
    }
    const out = await trackEvent({
      projectId: req.projectId,
      email: stringField(body, 'email') ?? '',
      event: typeof body.event === 'string' ? body.event : '',
      subscribed: boolField(body, 'subscribed'),
      data: dataValue(body),
    });
    sendJson(
      res,
      wrapped({
        contact: out.contactId,
        event: out.eventId,
        timestamp: new Date(
          Number(out.timestamp!.seconds) * 1000 + Math.floor(out.timestamp!.nanos / 1e6),
        ).toISOString(),
      }),
    );
  };
}

/** `/v1/track` (public key), its dashboard twin `/events/track` (both end in `track`), and the events endpoints. */
export function eventsRouter(
  contacts: Client<typeof ContactsService>,
  guards: KeyGuards,
  track: RequestHandler,
): Router {
  const r = new ApiRouter();
  const secret = guards.secret;

  const tracking = {
    tag: 'Events',
    body: TrackInput,
    responses: { 200: Tracked },
  };
  r.post(
    '/v1/track',
    { ...tracking, summary: 'Track an event for a contact (created if new)', auth: 'public' },
    guards.public,
    track,
  );
  r.post(
    '/events/track',
    { ...tracking, summary: 'Track an event (the dashboard twin of /v1/track, secret key)', auth: 'secret' },
    secret,
    track,
  );

  r.get(
    '/events',
    {
      summary: 'List events (cursor pages)',
      tag: 'Events',
      auth: 'secret',
      query: z.object({ limit: limitQuery(), cursor: stringQuery(), name: stringQuery('Only this event name') }),
      responses: { 200: EventPage },
    },
    secret,
    async (req, res) => {
      const out = await contacts.listEvents({
        projectId: req.projectId,
        limit: limitParam(req.query),
        cursor: stringParam(req.query, 'cursor') ?? '',
        name: stringParam(req.query, 'name') ?? '',
      });
      res.json({ data: out.events.map(eventJson), cursor: out.cursor, hasMore: out.hasMore });
    },
  );

  r.get(
    '/events/stats',
    {
      summary: 'Event counts per name over a window',
      tag: 'Events',
      auth: 'secret',
      query: z.object({
        days: z.coerce
          .number()
          .int()
          .min(1)
          .max(3650)
          .optional()
          .openapi({ description: 'Window in days (default 30)' }),
      }),
      responses: {
        200: z.object({
          total: z.number().int(),
          last24h: z.number().int(),
          events: z.array(
            z.object({
              name: z.string(),
              count: z.number().int(),
              contacts: z.number().int(),
              lastSeen: isoDate.nullable(),
            }),
          ),
        }),
      },
    },
    secret,
    async (req, res) => {
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
    },
  );

  r.get(
    '/events/names',
    {
      summary: 'Names of the events tracked in the project',
      tag: 'Events',
      auth: 'secret',
      responses: { 200: z.array(z.string()) },
    },
    secret,
    async (req, res) => {
      res.json((await contacts.listEventNames({ projectId: req.projectId })).names);
    },
  );

  r.get(
    '/events/contact/:contactId',
    {
      summary: "A contact's events (cursor pages)",
      tag: 'Events',
      auth: 'secret',
      query: z.object({ limit: limitQuery(100), cursor: stringQuery() }),
      responses: { 200: EventPage },
    },
    secret,
    async (req, res) => {
      const out = await contacts.listEvents({
        projectId: req.projectId,
        limit: limitParam(req.query, 100, 100),
        contactId: String(req.params.contactId),
        cursor: stringParam(req.query, 'cursor') ?? '',
      });
      res.json({ data: out.events.map(eventJson), cursor: out.cursor, hasMore: out.hasMore });
    },
  );

  r.delete(
    '/events/:eventName',
    {
      summary: 'Delete every event of a name',
      tag: 'Events',
      auth: 'secret',
      responses: { 200: z.object({ event: z.string(), deleted: z.number().int() }) },
    },
    secret,
    async (req, res) => {
      const out = await contacts.deleteEvents({ projectId: req.projectId, name: String(req.params.eventName) });
      res.json({ event: String(req.params.eventName), deleted: Number(out.deleted) });
    },
  );

  return r.router;
}
