import type { Router } from 'express';
import type { Client } from '@connectrpc/connect';
import { AppError, validationError } from '@svc/lib/errors';
import type { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { KeyGuards } from '../http/guards.js';
import { boolField, objectBody, stringField } from '../http/body.js';
import { boolParam, limitParam, stringParam } from '../http/query.js';
import { contactJson, fieldValueJson } from './contacts-json.js';
import { dataValue } from './contact-data.js';
import { z } from 'zod';
import {
  ApiRouter,
  boolQuery,
  cursorPage,
  filterCondition,
  flatBadRequest,
  id,
  isoDate,
  json,
  limitQuery,
  stringQuery,
} from '../http/api.js';

const Contact = z
  .object({
    id,
    email: z.string().email(),
    subscribed: z.boolean(),
    snoozedUntil: isoDate.nullable(),
    data: json.openapi({ description: 'Custom fields (SPEC.md "Custom data rules")' }),
    createdAt: isoDate.nullable(),
    updatedAt: isoDate.nullable(),
  })
  .openapi('Contact');
const ContactInput = z.object({
  email: z.string().email(),
  subscribed: z.boolean().optional(),
  data: json.optional().openapi({ description: 'Patched: a null value deletes a key' }),
});
const FieldValue = z.object({ value: z.unknown(), count: z.number().int() });
const CONTACT_ID = z.object({ id: id.openapi({ description: 'Contact id' }) });

/** Offset of POST /contacts/filter: past this, a preview page is better reached by narrowing the filter. */
const MAX_FILTER_OFFSET = 1_000_000;

/** Offset of an audience preview: absent or not a non-negative integer reads as 0, past the maximum is a 422. */
function filterOffset(raw: unknown): number {
  if (!Number.isInteger(raw) || (raw as number) < 0) return 0;
  if ((raw as number) > MAX_FILTER_OFFSET) {
    throw validationError([
      { field: 'offset', message: `offset must be at most ${MAX_FILTER_OFFSET}`, code: 'too_big', received: raw },
    ]);
  }
  return raw as number;
}

export function contactsRouter(contacts: Client<typeof ContactsService>, guards: KeyGuards): Router {
  const r = new ApiRouter();
  const secret = guards.secret;

  r.get(
    '/contacts',
    {
      summary: 'List contacts (cursor pages)',
      tag: 'Contacts',
      auth: 'secret',
      query: z.object({
        limit: limitQuery(),
        cursor: stringQuery(),
        search: stringQuery('Substring of the email'),
        subscribed: boolQuery,
        sort: stringQuery(),
        dir: z.enum(['asc', 'desc']).optional(),
      }),
      responses: { 200: cursorPage(Contact).extend({ total: z.number().int() }) },
    },
    secret,
    async (req, res) => {
      const out = await contacts.listContacts({
        projectId: req.projectId,
        limit: limitParam(req.query),
        cursor: stringParam(req.query, 'cursor') ?? '',
        search: stringParam(req.query, 'search') ?? '',
        subscribed: boolParam(req.query, 'subscribed'),
        sort: stringParam(req.query, 'sort') ?? '',
        dir: stringParam(req.query, 'dir') ?? '',
      });
      res.json({
        data: out.contacts.map(contactJson),
        cursor: out.cursor,
        hasMore: out.hasMore,
        total: Number(out.total),
      });
    },
  );

  r.post(
    '/contacts',
    {
      summary: 'Create or update a contact by email',
      tag: 'Contacts',
      auth: 'secret',
      body: ContactInput,
      responses: {
        200: Contact.extend({ _meta: z.object({ isNew: z.boolean(), isUpdate: z.boolean() }) }),
        201: Contact.extend({ _meta: z.object({ isNew: z.boolean(), isUpdate: z.boolean() }) }),
        400: flatBadRequest('a missing email'),
      },
    },
    secret,
    async (req, res) => {
      const body = objectBody(req.body);
      if (body.email === undefined || body.email === null || body.email === '')
        throw new AppError({ code: 'BAD_REQUEST', status: 400, message: 'email is required', flat: true });
      const out = await contacts.upsertContact({
        projectId: req.projectId,
        email: stringField(body, 'email') ?? '',
        subscribed: boolField(body, 'subscribed'),
        defaultSubscribed: true,
        data: dataValue(body),
      });
      res
        .status(out.isNew ? 201 : 200)
        .json({ ...contactJson(out.contact!), _meta: { isNew: out.isNew, isUpdate: out.isUpdate } });
    },
  );

  r.post(
    '/contacts/lookup',
    {
      summary: 'Look up contacts by email',
      tag: 'Contacts',
      auth: 'secret',
      body: z.object({ emails: z.array(z.string()) }),
      responses: {
        200: z.object({
          found: z.array(z.object({ id, email: z.string(), subscribed: z.boolean() })),
          notFound: z.array(z.string()),
        }),
      },
    },
    secret,
    async (req, res) => {
      const emails = objectBody(req.body).emails;
      if (!Array.isArray(emails) || emails.some((e) => typeof e !== 'string')) {
        throw new AppError({
          code: 'VALIDATION_ERROR',
          status: 422,
          message: 'Validation failed',
          errors: [{ field: 'emails', message: 'emails must be an array of strings', code: 'invalid_type' }],
        });
      }
      const out = await contacts.lookupContacts({ projectId: req.projectId, emails });
      res.json({
        found: out.found.map((c) => ({ id: c.id, email: c.email, subscribed: c.subscribed })),
        notFound: out.missing,
      });
    },
  );

  r.post(
    '/contacts/filter',
    {
      summary: 'Preview the contacts a filter condition matches',
      tag: 'Contacts',
      auth: 'secret',
      body: z.object({
        condition: filterCondition.nullable().optional(),
        limit: z.number().int().min(1).max(100).optional(),
        offset: z.number().int().min(0).max(1_000_000).optional(),
      }),
      responses: { 200: z.object({ data: z.array(Contact), total: z.number().int() }) },
    },
    secret,
    async (req, res) => {
      const body = objectBody(req.body);
      const limit = limitParam({ limit: body.limit });
      const offset = filterOffset(body.offset);
      const out = await contacts.page({
        projectId: req.projectId,
        condition: dataValue({ data: body.condition ?? null }),
        limit,
        offset,
      });
      res.json({ data: out.contacts.map(contactJson), total: Number(out.total) });
    },
  );

  r.get(
    '/contacts/fields',
    {
      summary: 'Fields of the contacts (standard and custom) with their inferred types',
      tag: 'Contacts',
      auth: 'secret',
      responses: {
        200: z.object({
          fields: z.array(
            z.object({
              field: z.string(),
              type: z.enum(['string', 'number', 'boolean', 'date']),
              isCustom: z.boolean(),
              coverage: z.number().min(0).max(1),
            }),
          ),
        }),
      },
    },
    secret,
    async (req, res) => {
      const { fields } = await contacts.listFields({ projectId: req.projectId });
      res.json({
        fields: fields.map((f) => ({ field: f.field, type: f.type, isCustom: f.isCustom, coverage: f.coverage })),
      });
    },
  );

  r.get(
    '/contacts/fields/:field/values',
    {
      summary: 'Most frequent values of a field',
      tag: 'Contacts',
      auth: 'secret',
      query: z.object({ limit: limitQuery(50, 500) }),
      responses: { 200: z.array(FieldValue) },
    },
    secret,
    async (req, res) => {
      const out = await contacts.listFieldValues({
        projectId: req.projectId,
        field: String(req.params.field),
        limit: limitParam(req.query, 50, 500),
      });
      res.json(out.values.map(fieldValueJson));
    },
  );

  r.delete(
    '/contacts/fields/:field',
    {
      summary: 'Delete a custom field from every contact',
      tag: 'Contacts',
      auth: 'secret',
      responses: { 200: z.object({ field: z.string(), contactsUpdated: z.number().int() }) },
      errors: [404, 422],
    },
    secret,
    async (req, res) => {
      const out = await contacts.deleteField({ projectId: req.projectId, field: String(req.params.field) });
      res.json({ field: String(req.params.field), contactsUpdated: Number(out.contactsUpdated) });
    },
  );

  r.get(
    '/contacts/:id',
    {
      summary: 'A contact',
      tag: 'Contacts',
      auth: 'secret',
      params: CONTACT_ID,
      responses: { 200: Contact },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(
        contactJson((await contacts.getContact({ projectId: req.projectId, id: String(req.params.id) })).contact!),
      );
    },
  );

  r.patch(
    '/contacts/:id',
    {
      summary: 'Update a contact (email, subscription, data patch)',
      tag: 'Contacts',
      auth: 'secret',
      params: CONTACT_ID,
      body: ContactInput.partial(),
      responses: { 200: Contact },
      errors: [404, 409],
    },
    secret,
    async (req, res) => {
      const body = objectBody(req.body);
      const out = await contacts.updateContact({
        projectId: req.projectId,
        id: String(req.params.id),
        email: stringField(body, 'email'),
        subscribed: boolField(body, 'subscribed'),
        data: dataValue(body),
      });
      res.json(contactJson(out.contact!));
    },
  );

  r.delete(
    '/contacts/:id',
    {
      summary: 'Delete a contact',
      tag: 'Contacts',
      auth: 'secret',
      params: CONTACT_ID,
      responses: { 204: null },
      errors: [404],
    },
    secret,
    async (req, res) => {
      await contacts.deleteContact({ projectId: req.projectId, id: String(req.params.id) });
      res.status(204).end();
    },
  );

  return r.router;
}
