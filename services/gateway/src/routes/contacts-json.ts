import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { BulkJob, Contact, Event, FieldValue, ImportJob } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { iso } from './identity-json.js';

export const contactJson = (c: Contact) => ({
  id: c.id,
  email: c.email,
  subscribed: c.subscribed,
  snoozedUntil: iso(c.snoozedUntil),
  data: c.data ?? {},
  createdAt: iso(c.createdAt),
  updatedAt: iso(c.updatedAt),
});

export const eventJson = (e: Event) => ({
  id: e.id,
  name: e.name,
  contactId: e.contactId,
  contactEmail: e.contactEmail || null,
  data: e.data ?? {},
  createdAt: iso(e.createdAt),
});

export const fieldValueJson = (v: FieldValue) => ({
  value: v.value ? toJson(ValueSchema, v.value) : null,
  count: Number(v.count),
});

export const importJobJson = (j: ImportJob) => ({
  jobId: j.jobId,
  status: j.status,
  totalRows: j.totalRows,
  processed: j.processed,
  imported: j.imported,
  updated: j.updated,
  skipped: j.skipped,
  errors: j.errors.map((e) => ({ row: e.row, email: e.email, reason: e.reason })),
  ...(j.failure ? { failure: j.failure } : {}),
  createdAt: iso(j.createdAt),
  completedAt: iso(j.completedAt),
});

export const bulkJobJson = (j: BulkJob) => ({
  jobId: j.jobId,
  operation: j.operation,
  status: j.status,
  total: j.total,
  processed: j.processed,
  succeeded: j.succeeded,
  notFound: j.notFound,
  createdAt: iso(j.createdAt),
  completedAt: iso(j.completedAt),
});
