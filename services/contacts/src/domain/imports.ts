import { randomUUID } from 'node:crypto';
import { parse } from 'csv-parse';
import { withTransaction } from '@svc/lib/db';
import { AppError, badRequest, notFound } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { enqueueMany } from '@svc/lib/outbox';
import type { ContactRow } from '../store/contact-rows.js';
import type { ContactBatches } from '../store/contacts-store.js';
import type { ImportJobRow, JobsStore } from '../store/jobs-store.js';
import { contactMessage, type Contacts } from './contacts.js';
import { rowToContact, validateCsvHeader } from './csv-typing.js';
import { applyDataPatch } from './custom-data.js';

export const MAX_CSV_BYTES = 5 * 1024 * 1024;
const BATCH_ROWS = 2000;
const WRITER_LANES = 2;

type CsvContact = { email: string; data: Record<string, unknown> };

function laneOf(email: string): number {
  let h = 0;
  for (const ch of email.toLowerCase()) h = (h * 31 + ch.charCodeAt(0)) | 0;
  return Math.abs(h) % WRITER_LANES;
}
const MAX_REPORTED_ERRORS = 1000;

function firstLine(csv: Buffer): string[] {
  const text = csv.subarray(0, 64 * 1024).toString('utf8');
  const end = text.search(/\r?\n/);
  const line = end === -1 ? text : text.slice(0, end);
  // Quoted header cells are rare but legal: strip the quotes for the column check.
  return line.split(',').map((c) => c.trim().replace(/^"(.*)"$/, '$1'));
}

/** SPEC.md "CSV import": queued on upload, processed in the background in batches. */
export class Imports {
  constructor(
    private readonly jobs: JobsStore,
    private readonly batches: ContactBatches,
    private readonly contacts: Contacts,
  ) {}

  async start(projectId: string, csv: Buffer, filename: string): Promise<ImportJobRow> {
    if (csv.length === 0) throw badRequest('The CSV file is empty');
    if (csv.length > MAX_CSV_BYTES) {
      throw new AppError({ code: 'PAYLOAD_TOO_LARGE', status: 413, message: `CSV files are limited to ${MAX_CSV_BYTES} bytes (5 MB)` });
    }
    if (!isUtf8(csv)) throw badRequest('The CSV file must be UTF-8 encoded');
    validateCsvHeader(firstLine(csv));
    return this.jobs.createImport({ id: randomUUID(), projectId, filename, csv });
  }

  async get(projectId: string, jobId: string): Promise<ImportJobRow> {
    const job = isUuid(jobId) ? await this.jobs.importJob(projectId, jobId) : null;
    if (!job) throw notFound('Import job', jobId);
    return job;
  }

  /** Runs one claimed job to completion; the file is read as a stream and written in batches. */
  async process(job: ImportJobRow & { csv: Buffer }): Promise<void> {
    const progress = { processed: 0, imported: 0, updated: 0, skipped: 0, errors: [] as Array<{ row: number; email: string; reason: string }> };
    // Rows go to writer lanes by email, so one email's rows stay in file order in one lane and
    // lanes never wait on each other's row locks; each lane writes while parsing goes on.
    const lanes = Array.from({ length: WRITER_LANES }, () => ({ rows: [] as CsvContact[], writing: Promise.resolve() }));
    const flush = async (lane: (typeof lanes)[number]) => {
      await lane.writing;
      const rows = lane.rows;
      lane.rows = [];
      lane.writing = this.writeBatch(job.project_id, rows, progress);
      // Surfaces a failure at the next await of this lane, never as an unhandled rejection.
      lane.writing.catch(() => undefined);
    };
    try {
      const parser = parse(job.csv, { bom: true, relax_column_count: true, skip_empty_lines: true, skip_records_with_empty_values: true });
      let header: string[] | undefined;
      let rowNumber = 1;
      for await (const record of parser as AsyncIterable<string[]>) {
        if (!header) {
          header = record;
          validateCsvHeader(header);
          continue;
        }
        rowNumber++;
        const row = rowToContact(header, record, rowNumber);
        progress.processed++;
        if (!row.ok) {
          progress.skipped++;
          if (progress.errors.length < MAX_REPORTED_ERRORS) progress.errors.push(row.error);
          continue;
        }
        const lane = lanes[laneOf(row.email)];
        lane.rows.push({ email: row.email, data: row.data });
        if (lane.rows.length >= BATCH_ROWS) {
          await flush(lane);
          await this.jobs.importProgress(job.id, progress);
        }
      }
      if (!header) throw badRequest('The CSV file has no header row');
      for (const lane of lanes) await flush(lane);
      for (const lane of lanes) await lane.writing;
      await this.jobs.importProgress(job.id, { ...progress, totalRows: progress.processed });
      await this.jobs.finishImport(job.id, 'completed');
    } catch (err) {
      await Promise.allSettled(lanes.map((l) => l.writing));
      const message = err instanceof AppError ? err.message : `Import failed: ${(err as Error).message}`;
      await this.jobs.importProgress(job.id, { ...progress, totalRows: progress.processed });
      await this.jobs.finishImport(job.id, 'failed', message);
    }
  }

  /**
   * One transaction per batch: rows for the same email (in the file or already stored) patch
   * one contact in file order, so a re-run updates in place and duplicates create nothing twice.
   */
  private async writeBatch(projectId: string, rows: CsvContact[], progress: { imported: number; updated: number }) {
    if (!rows.length) return;
    await withTransaction(this.batches.db, async (tx) => {
      const existing = new Map((await this.batches.lockByEmails(tx, projectId, rows.map((r) => r.email))).map((c) => [c.email.toLowerCase(), c]));
      const fresh = new Map<string, { id: string; email: string; data: Record<string, unknown> }>();
      const changed = new Map<string, ContactRow>();
      for (const row of rows) {
        const key = row.email.toLowerCase();
        const known = existing.get(key);
        if (known) {
          const merged = applyDataPatch(known.data, row.data);
          if (merged.changed) {
            const next = { ...known, data: merged.data };
            existing.set(key, next);
            changed.set(known.id, next);
          }
          progress.updated++;
        } else if (fresh.has(key)) {
          fresh.get(key)!.data = applyDataPatch(fresh.get(key)!.data, row.data).data;
          progress.updated++;
        } else {
          fresh.set(key, { id: randomUUID(), email: row.email, data: applyDataPatch({}, row.data).data });
          progress.imported++;
        }
      }
      const inserted = await this.batches.insertMany(tx, projectId, [...fresh.values()].map((f) => ({ ...f, subscribed: true })));
      const updated = await this.batches.updateMany(tx, projectId, [...changed.values()]);
      if (inserted.length < fresh.size) {
        // Created concurrently by another writer since the lock: patch them through the single-row path.
        const have = new Set(inserted.map((c) => c.email.toLowerCase()));
        for (const f of fresh.values()) {
          if (have.has(f.email.toLowerCase())) continue;
          await this.contacts.upsertIn(tx, { projectId, email: f.email, defaultSubscribed: true, data: f.data, mode: 'set' }, { patch: f.data, oneOff: {} });
        }
      }
      for (const c of [...inserted, ...updated]) await this.contacts.recordTypes(tx, projectId, c.data);
      await enqueueMany(tx, [
        ...inserted.map((c) => ({ subject: 'contacts.created', payload: contactMessage(c) })),
        ...updated.map((c) => ({ subject: 'contacts.updated', payload: contactMessage(c) })),
      ]);
    });
  }
}

function isUtf8(buf: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(buf);
    return true;
  } catch {
    return false;
  }
}
