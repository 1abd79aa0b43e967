import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import { validationError } from '@svc/lib/errors';
import type { SegmentsService } from '@svc/proto/svc/segments/v1/segments_pb';
import type { Router, Request } from 'express';
import type { KeyGuards } from '../http/guards.js';
import { boolField, objectBody, stringField } from '../http/body.js';
import { rangeParam } from '../http/query.js';
import { memberJson, segmentJson } from './segments-json.js';
import { z } from 'zod';
import { ApiRouter, filterCondition, flatBadRequest, id as uuid, isoDate, json } from '../http/api.js';

const Segment = z
  .object({
    id: uuid,
    name: z.string(),
    description: z.string().nullable(),
    type: z.enum(['DYNAMIC', 'STATIC']),
    condition: filterCondition.nullable(),
    trackMembership: z.boolean(),
    memberCount: z.number().int(),
    slug: z.string(),
    projectId: uuid,
    createdAt: isoDate.nullable(),
    updatedAt: isoDate.nullable(),
  })
  .openapi('Segment');
const SegmentMember = z.object({
  id: uuid,
  email: z.string(),
  subscribed: z.boolean(),
  data: json,
  createdAt: isoDate.nullable(),
  updatedAt: isoDate.nullable(),
});
const SegmentInput = z.object({
  name: z.string().min(1),
  description: z.string().nullable().optional(),
  type: z.enum(['DYNAMIC', 'STATIC']).default('DYNAMIC'),
  condition: filterCondition.optional().openapi({ description: 'Required for DYNAMIC segments' }),
  trackMembership: z.boolean().optional(),
});
const Emails = z.object({ emails: z.array(z.string().email()) });
const SEGMENT_ID = z.object({ id: uuid.openapi({ description: 'Segment id' }) });

const MAX_PAGE = 1_000_000;
const MAX_PAGE_SIZE = 100;

/** A filter tree as sent (any JSON): the segments service decides what is acceptable. */
const conditionValue = (body: Record<string, unknown>) =>
  body.condition === undefined ? undefined : fromJson(ValueSchema, body.condition as JsonValue);

/** `emails` must be an array of strings: protobuf cannot carry anything else to the service's checks. */
function emailsField(body: Record<string, unknown>): string[] {
  const emails = body.emails;
  if (!Array.isArray(emails) || emails.some((e) => typeof e !== 'string')) {
    throw validationError([{ field: 'emails', message: 'emails must be an array of strings', code: 'invalid_type' }]);
  }
  return emails;
}

/** SPEC.md offset pages: `page` 1..1,000,000 (422 outside), `pageSize` at least 1, clamped to 100. */
function pageParams(q: Record<string, unknown>) {
  const page = rangeParam(q, 'page', { def: 1, min: 1, max: MAX_PAGE });
  const size = rangeParam(q, 'pageSize', { def: 20, min: 1, max: Number.MAX_SAFE_INTEGER });
  return { page, pageSize: Math.min(size, MAX_PAGE_SIZE) };
}

export function segmentsRouter(segments: Client<typeof SegmentsService>, guards: KeyGuards): Router {
  const r = new ApiRouter();
  const secret = guards.secret;
  const id = (req: Request) => String(req.params.id);

  r.get(
    '/segments',
    { summary: "The project's segments", tag: 'Segments', auth: 'secret', responses: { 200: z.array(Segment) } },
    secret,
    async (req, res) => {
      res.json((await segments.listSegments({ projectId: req.projectId })).segments.map(segmentJson));
    },
  );

  r.post(
    '/segments',
    {
      summary: 'Create a segment (DYNAMIC: by condition; STATIC: by listed members)',
      tag: 'Segments',
      auth: 'secret',
      body: SegmentInput,
      responses: { 201: Segment, 400: flatBadRequest('a DYNAMIC segment without a condition object') },
      errors: [409],
    },
    secret,
    async (req, res) => {
      const body = objectBody(req.body);
      const out = await segments.createSegment({
        projectId: req.projectId,
        name: stringField(body, 'name') ?? '',
        description: stringField(body, 'description'),
        type: stringField(body, 'type') ?? '',
        condition: conditionValue(body),
        trackMembership: boolField(body, 'trackMembership'),
      });
      res.status(201).json(segmentJson(out.segment!));
    },
  );

  r.get(
    '/segments/:id',
    {
      summary: 'A segment',
      tag: 'Segments',
      auth: 'secret',
      params: SEGMENT_ID,
      responses: { 200: Segment },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(segmentJson((await segments.getSegment({ projectId: req.projectId, id: id(req) })).segment!));
    },
  );

  r.patch(
    '/segments/:id',
    {
      summary: 'Update a segment',
      tag: 'Segments',
      auth: 'secret',
      params: SEGMENT_ID,
      body: SegmentInput.omit({ type: true }).partial(),
      responses: { 200: Segment },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const body = objectBody(req.body);
      const out = await segments.updateSegment({
        projectId: req.projectId,
        id: id(req),
        name: stringField(body, 'name'),
        description: stringField(body, 'description'),
        clearDescription: body.description === null,
        condition: conditionValue(body),
        trackMembership: boolField(body, 'trackMembership'),
      });
      res.json(segmentJson(out.segment!));
    },
  );

  r.delete(
    '/segments/:id',
    {
      summary: 'Delete a segment',
      tag: 'Segments',
      auth: 'secret',
      params: SEGMENT_ID,
      responses: { 204: null },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      await segments.deleteSegment({ projectId: req.projectId, id: id(req) });
      res.status(204).end();
    },
  );

  r.get(
    '/segments/:id/contacts',
    {
      summary: 'Members of a segment (numbered pages)',
      tag: 'Segments',
      auth: 'secret',
      params: SEGMENT_ID,
      query: z.object({
        page: z.coerce.number().int().min(1).max(1_000_000).optional(),
        pageSize: z.coerce.number().int().min(1).optional().openapi({ description: 'Clamped to 100 (default 20)' }),
      }),
      responses: {
        200: z.object({
          data: z.array(SegmentMember),
          total: z.number().int(),
          page: z.number().int(),
          pageSize: z.number().int(),
          totalPages: z.number().int(),
        }),
      },
      errors: [404],
    },
    secret,
    async (req, res) => {
      const { page, pageSize } = pageParams(req.query);
      const out = await segments.listMembers({ projectId: req.projectId, id: id(req), page, pageSize });
      const total = Number(out.total);
      res.json({ data: out.members.map(memberJson), total, page, pageSize, totalPages: Math.ceil(total / pageSize) });
    },
  );

  r.post(
    '/segments/:id/members',
    {
      summary: 'Add members to a STATIC segment by email',
      tag: 'Segments',
      auth: 'secret',
      params: SEGMENT_ID,
      body: Emails.extend({ createMissing: z.boolean().optional(), subscribed: z.boolean().optional() }),
      responses: {
        200: z.object({ added: z.number().int(), created: z.number().int(), notFound: z.array(z.string()) }),
      },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const body = objectBody(req.body);
      const out = await segments.addMembers({
        projectId: req.projectId,
        id: id(req),
        emails: emailsField(body),
        createMissing: boolField(body, 'createMissing') ?? false,
        subscribed: boolField(body, 'subscribed'),
      });
      res.json({ added: out.added, created: out.created, notFound: out.notFound });
    },
  );

  r.delete(
    '/segments/:id/members',
    {
      summary: 'Remove members from a STATIC segment by email',
      tag: 'Segments',
      auth: 'secret',
      params: SEGMENT_ID,
      body: Emails,
      responses: { 200: z.object({ removed: z.number().int() }) },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await segments.removeMembers({
        projectId: req.projectId,
        id: id(req),
        emails: emailsField(objectBody(req.body)),
      });
      res.json({ removed: out.removed });
    },
  );

  r.post(
    '/segments/:id/compute',
    {
      summary: 'Recompute a tracked segment now (entries and exits)',
      tag: 'Segments',
      auth: 'secret',
      params: SEGMENT_ID,
      responses: { 200: Segment.extend({ entered: z.number().int(), exited: z.number().int() }) },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const out = await segments.computeSegment({ projectId: req.projectId, id: id(req) });
      res.json({ ...segmentJson(out.segment!), entered: out.entered, exited: out.exited });
    },
  );

  r.post(
    '/segments/:id/refresh',
    {
      summary: 'Refresh the member count of a segment',
      tag: 'Segments',
      auth: 'secret',
      params: SEGMENT_ID,
      responses: { 200: Segment },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(segmentJson((await segments.refreshSegment({ projectId: req.projectId, id: id(req) })).segment!));
    },
  );

  return r.router;
}
