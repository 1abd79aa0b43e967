import { randomUUID } from 'node:crypto';
import { withTransaction } from '@svc/lib/db';
import { notFound, validationError } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { BulkJobRow, JobsStore } from '../store/jobs-store.js';
import type { Contacts } from './contacts.js';

export const MAX_BULK_IDS = 1000;
const OPERATIONS = ['subscribe', 'unsubscribe', 'delete'] as const;
export type BulkOperation = (typeof OPERATIONS)[number];

/** Bulk subscribe / unsubscribe / delete by id: queued, processed in the background. */
export class Bulk {
  constructor(
    private readonly jobs: JobsStore,
    private readonly contacts: Contacts,
  ) {}

  async start(projectId: string, operation: string, ids: unknown): Promise<BulkJobRow> {
    if (!OPERATIONS.includes(operation as BulkOperation))
      throw validationError([{ field: 'operation', message: 'Unknown bulk operation', code: 'invalid_enum_value' }]);
    if (!Array.isArray(ids) || ids.length === 0) {
      throw validationError([
        { field: 'contactIds', message: 'contactIds must be a non-empty array of contact ids', code: 'invalid_type' },
      ]);
    }
    if (ids.length > MAX_BULK_IDS)
      throw validationError([
        { field: 'contactIds', message: `At most ${MAX_BULK_IDS} ids per call`, code: 'too_big' },
      ]);
    const bad = ids.findIndex((id) => !isUuid(id));
    if (bad !== -1)
      throw validationError([
        { field: `contactIds.${bad}`, message: 'Invalid contact id', code: 'invalid_string', received: ids[bad] },
      ]);
    return this.jobs.createBulk({ id: randomUUID(), projectId, operation, ids: [...new Set(ids as string[])] });
  }

  async get(projectId: string, jobId: string): Promise<BulkJobRow> {
    const job = isUuid(jobId) ? await this.jobs.bulkJob(projectId, jobId) : null;
    if (!job) throw notFound('Bulk job', jobId);
    return job;
  }

  async process(job: BulkJobRow): Promise<void> {
    try {
      const r = await withTransaction(this.contacts.pool, (tx) =>
        this.contacts.applyBulk(tx, job.project_id, job.operation, job.contact_ids),
      );
      await this.jobs.finishBulk(job.id, {
        status: 'completed',
        processed: job.contact_ids.length,
        succeeded: r.done.length,
        notFound: r.missing,
      });
    } catch {
      await this.jobs.finishBulk(job.id, { status: 'failed', processed: 0, succeeded: 0, notFound: [] });
    }
  }
}
