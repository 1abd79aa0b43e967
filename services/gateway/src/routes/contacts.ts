import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { Router, type RequestHandler } from 'express';
import multer from 'multer';
import type { Client } from '@connectrpc/connect';
import { AppError, badRequest, validationError } from '@svc/lib/errors';
import type { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { KeyGuards } from '../app.js';
import { boolField, objectBody, stringField } from '../http/body.js';
import { wrapped } from '../http/envelope.js';
import { boolParam, limitParam, rangeParam, stringParam } from '../http/query.js';
import { bulkJobJson, contactJson, eventJson, fieldValueJson, importJobJson } from './contacts-json.js';

const MAX_CSV_BYTES = 5 * 1024 * 1024;
/**
 * /contacts/import reads one file part; other form fields are ignored, so a few small ones are
 * tolerated and anything beyond is refused before it is buffered.
 */
const UPLOAD_LIMITS = {
  fileSize: MAX_CSV_BYTES,
  files: 1,
  fields: 10,
  fieldSize: 1024,
  fieldNameSize: 100,
  parts: 11,
  headerPairs: 20,
};
const UPLOAD_TOO_LARGE: Record<string, string> = {
  LIMIT_FILE_SIZE: `CSV files are limited to ${MAX_CSV_BYTES} bytes (5 MB)`,
  LIMIT_FIELD_VALUE: `Form fields are limited to ${UPLOAD_LIMITS.fieldSize} bytes`,
  LIMIT_FIELD_COUNT: `At most ${UPLOAD_LIMITS.fields} form fields besides the file`,
  LIMIT_PART_COUNT: `At most ${UPLOAD_LIMITS.parts} form parts`,
};

/** Multer and busboy failures in the envelope: 413 past a size or count limit, 400 for a malformed form. */
function uploadError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const code = err instanceof multer.MulterError ? err.code : undefined;
  if (code && UPLOAD_TOO_LARGE[code]) {
    return new AppError({ code: 'PAYLOAD_TOO_LARGE', status: 413, message: UPLOAD_TOO_LARGE[code] });
  }
  return badRequest(`Upload rejected: ${code ? (err as Error).message : 'malformed multipart/form-data body'}`);
}

/** Raw `data` for the contacts service, which applies the custom-data rules (and rejects non-objects). */
const dataValue = (body: Record<string, unknown>) => (body.data === undefined ? undefined : fromJson(ValueSchema, body.data as JsonValue));

/** The window of GET /events/stats (the contacts service applies the same range). */
const EVENT_STATS_DAYS = { def: 30, min: 1, max: 3650 };
/** Offset of POST /contacts/filter: past this, a preview page is better reached by narrowing the filter. */
const MAX_FILTER_OFFSET = 1_000_000;

const NO_USAGE = { segments: [], campaigns: [], workflows: [] };

/** Offset of an audience preview: absent or not a non-negative integer reads as 0, past the maximum is a 422. */
function filterOffset(raw: unknown): number {
  if (!Number.isInteger(raw) || (raw as number) < 0) return 0;
  if ((raw as number) > MAX_FILTER_OFFSET) {
    throw validationError([{ field: 'offset', message: `offset must be at most ${MAX_FILTER_OFFSET}`, code: 'too_big', received: raw }]);
  }
  return raw as number;
}

export function contactsRouter(contacts: Client<typeof ContactsService>, guards: KeyGuards): Router {
  const r = Router();
  const secret = guards.secret;
  const upload = multer({ storage: multer.memoryStorage(), limits: UPLOAD_LIMITS }).single('file');

  r.get('/contacts', secret, async (req, res) => {
    const out = await contacts.listContacts({
      projectId: req.projectId,
      limit: limitParam(req.query),
      cursor: stringParam(req.query, 'cursor') ?? '',
      search: stringParam(req.query, 'search') ?? '',
      subscribed: boolParam(req.query, 'subscribed'),
      sort: stringParam(req.query, 'sort') ?? '',
      dir: stringParam(req.query, 'dir') ?? '',
    });
    res.json({ data: out.contacts.map(contactJson), cursor: out.cursor, hasMore: out.hasMore, total: Number(out.total) });
  });

  r.post('/contacts', secret, async (req, res) => {
    const body = objectBody(req.body);
    if (body.email === undefined || body.email === null || body.email === '') throw new AppError({ code: 'BAD_REQUEST', status: 400, message: 'email is required', flat: true });
    const out = await contacts.upsertContact({
      projectId: req.projectId,
      email: stringField(body, 'email') ?? '',
      subscribed: boolField(body, 'subscribed'),
      defaultSubscribed: true,
      data: dataValue(body),
    });
    res.status(out.isNew ? 201 : 200).json({ ...contactJson(out.contact!), _meta: { isNew: out.isNew, isUpdate: out.isUpdate } });
  });

  r.post('/contacts/lookup', secret, async (req, res) => {
    const emails = objectBody(req.body).emails;
    if (!Array.isArray(emails) || emails.some((e) => typeof e !== 'string')) {
      throw new AppError({ code: 'VALIDATION_ERROR', status: 422, message: 'Validation failed', errors: [{ field: 'emails', message: 'emails must be an array of strings', code: 'invalid_type' }] });
    }
    const out = await contacts.lookupContacts({ projectId: req.projectId, emails });
    res.json({ found: out.found.map((c) => ({ id: c.id, email: c.email, subscribed: c.subscribed })), notFound: out.missing });
  });

  r.post('/contacts/filter', secret, async (req, res) => {
    const body = objectBody(req.body);
    const limit = limitParam({ limit: body.limit });
    const offset = filterOffset(body.offset);
    const out = await contacts.page({ projectId: req.projectId, condition: dataValue({ data: body.condition ?? null }), limit, offset });
    res.json({ data: out.contacts.map(contactJson), total: Number(out.total) });
  });

  r.get('/contacts/fields', secret, async (req, res) => {
    res.json((await contacts.listFields({ projectId: req.projectId })).fields.map((f) => ({ field: f.field, type: f.type, isCustom: f.isCustom, coverage: f.coverage })));
  });

  r.get('/contacts/fields/:field/values', secret, async (req, res) => {
    const out = await contacts.listFieldValues({ projectId: req.projectId, field: String(req.params.field), limit: limitParam(req.query, 50, 500) });
    res.json(out.values.map(fieldValueJson));
  });

  r.get('/contacts/fields/:field/usage', secret, async (req, res) => {
    // Segments, campaigns and workflows report their references once those services exist.
    res.json({ field: String(req.params.field), ...NO_USAGE });
  });

  r.delete('/contacts/fields/:field', secret, async (req, res) => {
    const out = await contacts.deleteField({ projectId: req.projectId, field: String(req.params.field) });
    res.json({ field: String(req.params.field), contactsUpdated: Number(out.contactsUpdated) });
  });

  r.post('/contacts/import', secret, (req, res, next) => {
    upload(req, res, (err: unknown) => next(err ? uploadError(err) : undefined));
  }, async (req, res) => {
    if (!req.file) throw badRequest('Send the CSV as multipart/form-data in a field named "file"');
    const out = await contacts.startImport({ projectId: req.projectId, csv: req.file.buffer, filename: req.file.originalname });
    res.status(202).json({ jobId: out.job!.jobId, status: 'queued' });
  });

  r.get('/contacts/import/:jobId', secret, async (req, res) => {
    res.json(importJobJson((await contacts.getImportJob({ projectId: req.projectId, jobId: String(req.params.jobId) })).job!));
  });

  for (const operation of ['subscribe', 'unsubscribe', 'delete'] as const) {
    r.post(`/contacts/bulk-${operation}`, secret, async (req, res) => {
      const ids = objectBody(req.body).contactIds;
      if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string')) {
        throw new AppError({ code: 'VALIDATION_ERROR', status: 422, message: 'Validation failed', errors: [{ field: 'contactIds', message: 'contactIds must be an array of contact ids', code: 'invalid_type' }] });
      }
      const out = await contacts.startBulkJob({ projectId: req.projectId, operation, contactIds: ids });
      res.status(202).json({ jobId: out.job!.jobId, status: 'queued', total: out.job!.total });
    });
  }

  r.get('/contacts/bulk/:jobId', secret, async (req, res) => {
    res.json(bulkJobJson((await contacts.getBulkJob({ projectId: req.projectId, jobId: String(req.params.jobId) })).job!));
  });

  r.get('/contacts/:id', secret, async (req, res) => {
    res.json(contactJson((await contacts.getContact({ projectId: req.projectId, id: String(req.params.id) })).contact!));
  });

  r.patch('/contacts/:id', secret, async (req, res) => {
    const body = objectBody(req.body);
    const out = await contacts.updateContact({
      projectId: req.projectId,
      id: String(req.params.id),
      email: stringField(body, 'email'),
      subscribed: boolField(body, 'subscribed'),
      data: dataValue(body),
    });
    res.json(contactJson(out.contact!));
  });

  r.delete('/contacts/:id', secret, async (req, res) => {
    await contacts.deleteContact({ projectId: req.projectId, id: String(req.params.id) });
    res.status(204).end();
  });

  // Events (SPEC.md /v1/track, and the dashboard endpoints).
  const track = (keyed: RequestHandler): RequestHandler[] => [
    keyed,
    async (req, res) => {
      const body = objectBody(req.body);
      if (body.event !== undefined && typeof body.event !== 'string') {
        throw new AppError({ code: 'VALIDATION_ERROR', status: 422, message: 'Validation failed', errors: [{ field: 'event', message: 'event must be a string', code: 'invalid_type', received: body.event }] });
      }
      const out = await contacts.trackEvent({
        projectId: req.projectId,
        email: stringField(body, 'email') ?? '',
        event: typeof body.event === 'string' ? body.event : '',
        subscribed: boolField(body, 'subscribed'),
        data: dataValue(body),
      });
      res.json(wrapped({ contact: out.contactId, event: out.eventId, timestamp: new Date(Number(out.timestamp!.seconds) * 1000 + Math.floor(out.timestamp!.nanos / 1e6)).toISOString() }));
    },
  ];
  r.post('/v1/track', ...track(guards.public));
  r.post('/events/track', ...track(secret));

  r.get('/events', secret, async (req, res) => {
    const out = await contacts.listEvents({ projectId: req.projectId, limit: limitParam(req.query), cursor: stringParam(req.query, 'cursor') ?? '', name: stringParam(req.query, 'name') ?? '' });
    res.json({ data: out.events.map(eventJson), cursor: out.cursor, hasMore: out.hasMore });
  });

  r.get('/events/stats', secret, async (req, res) => {
    const days = rangeParam(req.query, 'days', EVENT_STATS_DAYS);
    const s = await contacts.getEventStats({ projectId: req.projectId, days });
    res.json({
      total: Number(s.total),
      last24h: Number(s.last24h),
      events: s.names.map((n) => ({ name: n.name, count: Number(n.count), contacts: Number(n.contacts), lastSeen: n.lastSeen ? new Date(Number(n.lastSeen.seconds) * 1000).toISOString() : null })),
    });
  });

  r.get('/events/names', secret, async (req, res) => {
    res.json((await contacts.listEventNames({ projectId: req.projectId })).names);
  });

  r.get('/events/contact/:contactId', secret, async (req, res) => {
    const out = await contacts.listEvents({ projectId: req.projectId, limit: limitParam(req.query, 100, 100), contactId: String(req.params.contactId), cursor: stringParam(req.query, 'cursor') ?? '' });
    res.json({ data: out.events.map(eventJson), cursor: out.cursor, hasMore: out.hasMore });
  });

  r.get('/events/:eventName/usage', secret, async (req, res) => {
    res.json({ event: String(req.params.eventName), ...NO_USAGE });
  });

  r.delete('/events/:eventName', secret, async (req, res) => {
    const out = await contacts.deleteEvents({ projectId: req.projectId, name: String(req.params.eventName) });
    res.json({ event: String(req.params.eventName), deleted: Number(out.deleted) });
  });

  return r;
}
