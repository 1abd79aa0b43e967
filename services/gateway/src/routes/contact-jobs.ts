import type { Router } from 'express';
import type { Client } from '@connectrpc/connect';
import { AppError, badRequest } from '@svc/lib/errors';
import type { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import type { KeyGuards } from '../http/guards.js';
import { objectBody } from '../http/body.js';
import { singleFileUpload } from '../http/file-upload.js';
import { bulkJobJson, importJobJson } from './contacts-json.js';
import { z } from 'zod';
import { ApiRouter, id, isoDate } from '../http/api.js';

const Job = z.object({ jobId: id, status: z.literal('queued') });
const ImportJob = z
  .object({
    jobId: id,
    status: z.enum(['queued', 'processing', 'completed', 'failed']),
    totalRows: z.number().int(),
    processed: z.number().int(),
    imported: z.number().int(),
    updated: z.number().int(),
    skipped: z.number().int(),
    errors: z.array(z.object({ row: z.number().int(), email: z.string(), reason: z.string() })),
    failure: z.string().optional(),
    createdAt: isoDate.nullable(),
    completedAt: isoDate.nullable(),
  })
  .openapi('ImportJob');
const BulkJob = z
  .object({
    jobId: id,
    operation: z.enum(['subscribe', 'unsubscribe', 'delete']),
    status: z.string(),
    total: z.number().int(),
    processed: z.number().int(),
    succeeded: z.number().int(),
    notFound: z.array(id).openapi({ description: 'Ids of the job that matched no contact' }),
    createdAt: isoDate.nullable(),
    completedAt: isoDate.nullable(),
  })
  .openapi('BulkJob');

/** CSV import and bulk operations: jobs the contacts service runs in the background. */
export function contactJobsRouter(contacts: Client<typeof ContactsService>, guards: KeyGuards): Router {
  const r = new ApiRouter();
  const secret = guards.secret;
  const upload = singleFileUpload(5 * 1024 * 1024, 'CSV files');

  r.post(
    '/contacts/import',
    {
      summary: 'Import contacts from a CSV file (a background job)',
      tag: 'Contacts',
      auth: 'secret',
      bodyType: 'multipart/form-data',
      body: z.object({
        file: z.string().openapi({ format: 'binary', description: 'CSV, at most 5 MB; header row with email' }),
      }),
      responses: { 202: Job },
      errors: [400, 413],
    },
    secret,
    upload,
    async (req, res) => {
      if (!req.file) throw badRequest('Send the CSV as multipart/form-data in a field named "file"');
      const out = await contacts.startImport({
        projectId: req.projectId,
        csv: req.file.buffer,
        filename: req.file.originalname,
      });
      res.status(202).json({ jobId: out.job!.jobId, status: 'queued' });
    },
  );

  r.get(
    '/contacts/import/:jobId',
    {
      summary: 'Progress and result of a CSV import',
      tag: 'Contacts',
      auth: 'secret',
      responses: { 200: ImportJob },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(
        importJobJson(
          (await contacts.getImportJob({ projectId: req.projectId, jobId: String(req.params.jobId) })).job!,
        ),
      );
    },
  );

  for (const operation of ['subscribe', 'unsubscribe', 'delete'] as const) {
    r.post(
      `/contacts/bulk-${operation}`,
      {
        summary: `Bulk ${operation} contacts by id (a background job)`,
        tag: 'Contacts',
        auth: 'secret',
        body: z.object({ contactIds: z.array(id).max(10_000) }),
        responses: { 202: Job.extend({ total: z.number().int() }) },
      },
      secret,
      async (req, res) => {
        const ids = objectBody(req.body).contactIds;
        if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string')) {
          throw new AppError({
            code: 'VALIDATION_ERROR',
            status: 422,
            message: 'Validation failed',
            errors: [
              { field: 'contactIds', message: 'contactIds must be an array of contact ids', code: 'invalid_type' },
            ],
          });
        }
        const out = await contacts.startBulkJob({ projectId: req.projectId, operation, contactIds: ids });
        res.status(202).json({ jobId: out.job!.jobId, status: 'queued', total: out.job!.total });
      },
    );
  }

  r.get(
    '/contacts/bulk/:jobId',
    {
      summary: 'Progress of a bulk operation',
      tag: 'Contacts',
      auth: 'secret',
      responses: { 200: BulkJob },
      errors: [404],
    },
    secret,
    async (req, res) => {
      res.json(
        bulkJobJson((await contacts.getBulkJob({ projectId: req.projectId, jobId: String(req.params.jobId) })).job!),
      );
    },
  );

  return r.router;
}
