import { create, fromJson, toJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate, ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import { billingPeriod } from '@svc/lib/billing-caps';
import type { ContactBilling } from './domain/contact-billing.js';
import type { ConnectRouter } from '@connectrpc/connect';
import { isDependencyUnavailable } from '@svc/lib/dependency-errors';
import { AppError, validationError } from '@svc/lib/errors';
import type { Logger } from '@svc/lib/logger';
import { errorInfo, toConnectError } from '@svc/lib/rpc-errors';
import {
  BulkJobSchema,
  ContactSchema,
  ContactsService,
  EventSchema,
  ImportJobSchema,
  TrackEventRequestSchema,
  type TrackEventRequest,
} from '@svc/proto/svc/contacts/v1/contacts_pb';
import { settleItems } from '@svc/lib/batch-items';
import type { Audiences } from './domain/audiences.js';
import type { Bulk } from './domain/bulk.js';
import type { ContactUpserts } from './domain/contact-upserts.js';
import { requireEmailPresent, type Contacts, type UpsertResult } from './domain/contacts.js';
import { MAX_TRACK_ITEMS, type Events } from './domain/events.js';
import type { Fields } from './domain/fields.js';
import type { Imports } from './domain/imports.js';
import type { Segments } from './domain/segments.js';
import type { ContactRow, EventRow } from './store/contact-rows.js';
import type { BulkJobRow, ImportJobRow } from './store/jobs-store.js';

export interface ContactsDomain {
  contacts: Contacts;
  upserts: ContactUpserts;
  events: Events;
  fields: Fields;
  audiences: Audiences;
  imports: Imports;
  bulk: Bulk;
  segments: Segments;
  /** Wakes the job runner after a job is queued. */
  kickJobs(): void;
  /** The contacts and tracked-events caps, taken before a write (README "Billing"). */
  billing: ContactBilling;
  /** Contacts held and client-tracked events since a date. */
  usage(projectId: string, since: Date): Promise<{ contacts: number; events: number }>;
}

/** `undefined` when the client sent no value (field omitted), JSON otherwise. */
const json = (v?: Value): JsonValue | undefined => (v === undefined ? undefined : toJson(ValueSchema, v));

export const contactPb = (c: ContactRow) =>
  create(ContactSchema, {
    id: c.id,
    email: c.email,
    subscribed: c.subscribed,
    snoozedUntil: c.snoozed_until ? timestampFromDate(c.snoozed_until) : undefined,
    data: c.data as JsonObject,
    createdAt: timestampFromDate(c.created_at),
    updatedAt: timestampFromDate(c.updated_at),
  });

async function trackOne(d: ContactsDomain, req: TrackEventRequest) {
  // The events cap, and the contacts cap when the address is new (README "Billing").
  const r = await d.billing.guard(req.projectId, { emails: [req.email], events: 1 }, () =>
    d.events.track({
      projectId: req.projectId,
      email: req.email,
      event: req.event,
      subscribed: req.subscribed,
      data: json(req.data),
    }),
  );
  return { contactId: r.contactId, eventId: r.event.id, timestamp: timestampFromDate(r.event.created_at) };
}

/** One item of a TrackEvents call, in its own request's context: its log line carries that request. */
async function trackItem(d: ContactsDomain, logger: Logger, req: TrackEventRequest) {
  const started = performance.now();
  try {
    const out = await trackOne(d, req);
    logger.debug({ procedure: 'TrackEvents', ms: performance.now() - started }, 'track handled');
    return out;
  } catch (err) {
    if (!(err instanceof AppError) && !isDependencyUnavailable(err)) logger.error({ err }, 'track failed');
    throw err;
  }
}

const upsertedPb = (r: UpsertResult) => ({
  contact: contactPb(r.contact),
  isNew: r.isNew,
  isUpdate: r.isUpdate,
  oneOff: r.patch.oneOff as JsonObject,
});

const eventPb = (e: EventRow) =>
  create(EventSchema, {
    id: e.id,
    contactId: e.contact_id,
    name: e.name,
    data: e.data as JsonObject,
    createdAt: timestampFromDate(e.created_at),
    contactEmail: e.contact_email ?? '',
  });

const importPb = (j: ImportJobRow) =>
  create(ImportJobSchema, {
    jobId: j.id,
    status: j.status === 'running' ? 'queued' : j.status,
    totalRows: j.total_rows,
    processed: j.processed,
    imported: j.imported,
    updated: j.updated,
    skipped: j.skipped,
    errors: j.errors,
    failure: j.failure ?? '',
    createdAt: timestampFromDate(j.created_at),
    completedAt: j.completed_at ? timestampFromDate(j.completed_at) : undefined,
  });

const bulkPb = (j: BulkJobRow) =>
  create(BulkJobSchema, {
    jobId: j.id,
    operation: j.operation,
    status: j.status === 'running' ? 'queued' : j.status,
    total: j.contact_ids.length,
    processed: j.processed,
    succeeded: j.succeeded,
    notFound: j.not_found,
    createdAt: timestampFromDate(j.created_at),
    completedAt: j.completed_at ? timestampFromDate(j.completed_at) : undefined,
  });

export function contactsRoutes(d: ContactsDomain, logger: Logger) {
  return (router: ConnectRouter) =>
    router.service(ContactsService, {
      async listContacts(req) {
        const r = await d.contacts.list({
          projectId: req.projectId,
          limit: req.limit,
          cursor: req.cursor || undefined,
          search: req.search,
          subscribed: req.subscribed,
          sort: req.sort,
          dir: req.dir,
        });
        return { contacts: r.contacts.map(contactPb), cursor: r.cursor, hasMore: r.hasMore, total: BigInt(r.total) };
      },
      async upsertContact(req) {
        requireEmailPresent(req.email);
        const r = await d.billing.guard(req.projectId, { emails: [req.email] }, () =>
          d.contacts.upsert({
            projectId: req.projectId,
            email: req.email,
            subscribed: req.subscribed,
            defaultSubscribed: req.defaultSubscribed,
            data: json(req.data),
            mode: 'set',
          }),
        );
        return upsertedPb(r);
      },
      async upsertContacts(req) {
        const items = req.items.map((i) => ({ ...i, data: i.data as JsonObject | undefined }));
        const emails = items.map((i) => i.email);
        const results = await d.billing.guard(req.projectId, { emails }, () =>
          d.upserts.upsertMany(req.projectId, items),
        );
        return {
          results: results.map((r) =>
            r.ok
              ? { result: { case: 'upserted' as const, value: upsertedPb(r.value) } }
              : { result: { case: 'error' as const, value: errorInfo(r.error) } },
          ),
        };
      },
      async getContact(req) {
        return { contact: contactPb(await d.contacts.get(req.projectId, req.id)) };
      },
      async updateContact(req) {
        const c = await d.contacts.update(req.projectId, req.id, {
          email: req.email,
          subscribed: req.subscribed,
          data: json(req.data),
        });
        return { contact: contactPb(c) };
      },
      async deleteContact(req) {
        await d.contacts.remove(req.projectId, req.id);
        return {};
      },
      async lookupContacts(req) {
        const r = await d.contacts.lookup(req.projectId, req.emails, req.ids);
        return { found: r.found.map(contactPb), missing: r.missing };
      },
      async listFields(req) {
        return { fields: await d.fields.list(req.projectId) };
      },
      async listFieldValues(req) {
        const values = await d.fields.values(req.projectId, req.field, req.limit || 50);
        return {
          values: values.map((v) => ({ value: fromJson(ValueSchema, v.value as JsonValue), count: BigInt(v.count) })),
        };
      },
      async deleteField(req) {
        return { contactsUpdated: BigInt(await d.fields.remove(req.projectId, req.field)) };
      },
      trackEvent: (req) => trackOne(d, req),
      async trackEvents(req) {
        if (req.items.length > MAX_TRACK_ITEMS) {
          throw validationError([
            { field: 'items', code: 'too_big', message: `At most ${MAX_TRACK_ITEMS} items per call` },
          ]);
        }
        // Every item is submitted in this tick, inside its own request, so they share one group commit.
        const outcomes = await settleItems(req.items, 'TrackEvents item', (i) =>
          trackItem(d, logger, i.event ?? create(TrackEventRequestSchema)),
        );
        return {
          results: outcomes.map((o) =>
            o.ok
              ? { result: { case: 'tracked' as const, value: o.value } }
              : { result: { case: 'error' as const, value: o.error } },
          ),
        };
      },
      async listEvents(req) {
        const r = await d.events.list({
          projectId: req.projectId,
          limit: req.limit,
          cursor: req.cursor || undefined,
          name: req.name || undefined,
          contactId: req.contactId || undefined,
        });
        return { events: r.events.map(eventPb), cursor: r.cursor, hasMore: r.hasMore };
      },
      async getEventStats(req) {
        const s = await d.events.stats(req.projectId, req.days || 30);
        return {
          total: BigInt(s.total),
          last24h: BigInt(s.last24h),
          names: s.names.map((n) => ({
            name: n.name,
            count: BigInt(n.count),
            contacts: BigInt(n.contacts),
            lastSeen: timestampFromDate(n.last_seen),
          })),
        };
      },
      async getTopEvents(req) {
        const names = await d.events.topEvents(req.projectId, req.days || 30, req.limit || 10);
        return {
          names: names.map((n) => ({
            name: n.name,
            count: BigInt(n.count),
            contacts: BigInt(n.contacts),
            lastSeen: timestampFromDate(n.last_seen),
          })),
        };
      },
      async listEventNames(req) {
        return { names: await d.events.names(req.projectId) };
      },
      async deleteEvents(req) {
        return { deleted: BigInt(await d.events.deleteByName(req.projectId, req.name)) };
      },
      async count(req) {
        return { count: BigInt(await d.audiences.count(req.projectId, json(req.condition))) };
      },
      async page(req) {
        const r = await d.audiences.page(req.projectId, json(req.condition), req.limit || 20, req.offset);
        return { contacts: r.contacts.map(contactPb), total: BigInt(r.total) };
      },
      async *stream(req) {
        // A stream's errors bypass the unary error interceptor: convert them here (422 on a bad tree or after_id).
        try {
          const condition = json(req.condition);
          if (req.withContacts) {
            const rows = d.audiences.streamContacts(req.projectId, condition, req.subscribedOnly, req.afterId);
            for await (const batch of rows)
              yield {
                contactIds: batch.map((r) => r.id),
                emails: batch.map((r) => r.email),
                contacts: batch.map(contactPb),
              };
            return;
          }
          for await (const batch of d.audiences.stream(req.projectId, condition, req.subscribedOnly, req.afterId)) {
            yield { contactIds: batch.map((b) => b.id), emails: batch.map((b) => b.email) };
          }
        } catch (err) {
          throw toConnectError(err);
        }
      },
      async startImport(req) {
        const job = await d.imports.start(req.projectId, Buffer.from(req.csv), req.filename);
        d.kickJobs();
        return { job: importPb(job) };
      },
      async getContactsUsage(req) {
        const u = await d.usage(req.projectId, req.since ? timestampDate(req.since) : billingPeriod().start);
        return { contacts: BigInt(u.contacts), events: BigInt(u.events) };
      },
      async getImportJob(req) {
        return { job: importPb(await d.imports.get(req.projectId, req.jobId)) };
      },
      async startBulkJob(req) {
        const job = await d.bulk.start(req.projectId, req.operation, req.contactIds);
        d.kickJobs();
        return { job: bulkPb(job) };
      },
      async getBulkJob(req) {
        return { job: bulkPb(await d.bulk.get(req.projectId, req.jobId)) };
      },
      async defineSegment(req) {
        await d.segments.define(req.projectId, req.segmentId, json(req.condition), req.static);
        return {};
      },
      async forgetSegment(req) {
        await d.segments.forget(req.projectId, req.segmentId);
        return {};
      },
      async setSegmentMembers(req) {
        return d.segments.setMembers(req.projectId, req.segmentId, req.addContactIds, req.removeContactIds);
      },
      async matchSegments(req) {
        return { segmentIds: await d.segments.match(req.projectId, req.contactId, req.segmentIds) };
      },
    });
}
