import type { BillingCaps } from '@svc/lib/billing-caps';
import { randomUUID } from 'node:crypto';
import { CsvError, Parser, type Options as CsvOptions } from 'csv-parse';
import { CoalescingTask } from '@svc/lib/coalescing-task';
import { withTransaction } from '@svc/lib/db';
import { AppError, badRequest, notFound } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import type { Logger } from '@svc/lib/logger';
import { enqueueMany } from '@svc/lib/outbox';
import type { ContactRow } from '../store/contact-rows.js';
import { importLines, type ContactBatches } from '../store/contacts-store.js';
import type { FieldsStore } from '../store/fields-store.js';
import type { ImportJobRow, JobsStore } from '../store/jobs-store.js';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { outgoingContext } from '@svc/lib/request-context';
import { contactUpdated } from './bus-messages.js';
import type { Contacts } from './contacts.js';
import {
  checkRepeatedColumns,
  csvRowReader,
  rowError,
  validateCsvHeader,
  type CsvRow,
  type RowError,
} from './csv-typing.js';
import { applyDataPatch } from './custom-data.js';
import { MAX_CUSTOM_FIELDS } from './fields.js';
import { newFieldTypes, type FieldType } from './type-inference.js';

export const MAX_CSV_BYTES = 5 * 1024 * 1024;
const BATCH_ROWS = 2000;
const WRITER_LANES = 2;
const MAX_REPORTED_ERRORS = 1000;
/** Bytes handed to the parser at a time; the event loop gets a turn between slices. */
const PARSE_SLICE_BYTES = 64 * 1024;

/** `json` is `data` serialized, what the insert of a new contact sends. */
type CsvContact = { row: number; email: string; data: Record<string, unknown>; json: string };

/**
 * A job's counts. Rows count once settled: `imported`/`updated` when their batch has committed,
 * `skipped` when refused, so `processed` = imported + updated + skipped matches what is stored,
 * also when the job fails halfway.
 */
type Progress = { processed: number; imported: number; updated: number; skipped: number; errors: RowError[] };

function laneOf(email: string): number {
  let h = 0;
  for (const ch of email.toLowerCase()) h = (h * 31 + ch.charCodeAt(0)) | 0;
  return Math.abs(h) % WRITER_LANES;
}

/**
 * The file's records, a slice's worth at a time: the parser is fed synchronously and its records taken
 * as it pushes them, not through an async iterator, which cost a promise and an info object per record.
 */
async function* csvRecords(csv: Buffer, options: CsvOptions): AsyncGenerator<string[][]> {
  const parser = new Parser(options);
  let records: string[][] = [];
  let failure: { err: unknown } | undefined;
  const ended = new Promise<void>((resolve) => parser.once('end', resolve).once('close', resolve));
  parser.on('data', (record: string[]) => records.push(record));
  parser.on('error', (err) => void (failure ??= { err }));
  try {
    for (let offset = 0; offset < csv.length; offset += PARSE_SLICE_BYTES) {
      parser.write(csv.subarray(offset, offset + PARSE_SLICE_BYTES));
      await new Promise(setImmediate);
      if (failure) throw failure.err;
      const batch = records;
      records = [];
      yield batch;
    }
    parser.end();
    await ended;
    if (failure) throw failure.err;
    yield records;
  } finally {
    parser.destroy();
  }
}

function firstLine(csv: Buffer): string[] {
  const text = csv.subarray(0, 64 * 1024).toString('utf8');
  const end = text.search(/\r?\n/);
  const line = end === -1 ? text : text.slice(0, end);
  // Quoted header cells are rare but legal: strip the quotes for the column check.
  return line.split(',').map((c) => c.trim().replace(/^"(.*)"$/, '$1'));
}

function refuse(progress: Progress, error: RowError): void {
  progress.processed++;
  progress.skipped++;
  if (progress.errors.length < MAX_REPORTED_ERRORS) progress.errors.push(error);
}

function settle(progress: Progress, written: { imported: number; updated: number }): void {
  progress.processed += written.imported + written.updated;
  progress.imported += written.imported;
  progress.updated += written.updated;
}

/** A write refused because of the row itself (422: a custom-data rule), as opposed to a fault. */
const refusesRow = (err: unknown): err is AppError =>
  err instanceof AppError && (err.status === 422 || err.code === 'BILLING_LIMIT_REACHED');

const refusalReason = (err: AppError) =>
  err.code === 'BILLING_LIMIT_REACHED' ? 'billing_limit' : (err.errors?.[0]?.code ?? 'invalid_data');

/**
 * A row that would take the project past MAX_CUSTOM_FIELDS fails alone, before any write; the
 * fields of accepted rows are taken from the budget.
 */
function claimFields(known: Map<string, FieldType>, row: CsvContact): RowError | undefined {
  const fresh = newFieldTypes(known, row.data);
  if (known.size + fresh.length > MAX_CUSTOM_FIELDS) return rowError(row.row, row.email, 'too_many_fields');
  for (const f of fresh) known.set(f.path, f.type);
  return undefined;
}

/** The job's row was deleted while it ran (a project reset or deletion): it stops without writing more. */
class ImportJobGone extends Error {}

/** The job's `failure`: no internal detail (addresses, cell contents) reaches the tenant. */
function failureMessage(err: unknown): string {
  if (err instanceof AppError) return err.message;
  if (err instanceof CsvError) {
    return `The CSV file is malformed at line ${Number(err.lines)} (${err.code}); the rows before it were imported`;
  }
  return 'Import failed: internal error; the rows counted were imported';
}

/** SPEC.md "CSV import": queued on upload, processed in the background in batches. */
export class Imports {
  constructor(
    private readonly jobs: JobsStore,
    private readonly batches: ContactBatches,
    private readonly contacts: Contacts,
    private readonly fields: FieldsStore,
    private readonly logger: Logger,
    /** The contacts cap: a batch takes its new contacts from it; rows beyond it are skipped (`billing_limit`). */
    private readonly caps?: BillingCaps,
  ) {}

  async start(projectId: string, csv: Buffer, filename: string): Promise<ImportJobRow> {
    if (csv.length === 0) throw badRequest('The CSV file is empty');
    if (csv.length > MAX_CSV_BYTES) {
      throw new AppError({
        code: 'PAYLOAD_TOO_LARGE',
        status: 413,
        message: `CSV files are limited to ${MAX_CSV_BYTES} bytes (5 MB)`,
      });
    }
    if (!isUtf8(csv)) throw badRequest('The CSV file must be UTF-8 encoded');
    const header = firstLine(csv);
    validateCsvHeader(header);
    // A quote left in a cell means the plain split was not the header's real cells: the job checks those.
    if (!header.some((cell) => cell.includes('"'))) checkRepeatedColumns(header);
    return this.jobs.createImport({ id: randomUUID(), projectId, filename, csv });
  }

  async get(projectId: string, jobId: string): Promise<ImportJobRow> {
    const job = isUuid(jobId) ? await this.jobs.importJob(projectId, jobId) : null;
    if (!job) throw notFound('Import job', jobId);
    return job;
  }

  /** Runs one claimed job to completion; the file is read as a stream and written in batches. */
  async process(job: ImportJobRow & { csv: Buffer }): Promise<void> {
    const progress: Progress = { processed: 0, imported: 0, updated: 0, skipped: 0, errors: [] };
    // Rows go to writer lanes by email, so one email's rows stay in file order in one lane and
    // lanes never wait on each other's row locks; each lane writes while parsing goes on.
    const lanes = Array.from({ length: WRITER_LANES }, () => ({
      rows: [] as CsvContact[],
      writing: Promise.resolve(),
    }));
    const flush = async (lane: (typeof lanes)[number]) => {
      await lane.writing;
      const rows = lane.rows;
      lane.rows = [];
      lane.writing = this.commitBatch(job, rows, progress);
      // Surfaces a failure at the next await of this lane, never as an unhandled rejection.
      lane.writing.catch(() => undefined);
    };
    // Progress (which renews the lease) is written beside the parser, never in its way: one write
    // at a time, the next one with the counts of then; a failed write fails the job at the next batch.
    let progressFailed: { err: unknown } | undefined;
    const saveProgress = new CoalescingTask(
      () => this.jobs.importProgress(job.id, progress),
      (err) => void (progressFailed ??= { err }),
    );
    try {
      const known = new Map((await this.fields.types(job.project_id)).map((t) => [t.path, t.type]));
      // The parser runs ahead of the writes: a malformed line is noted when parsed, and the job
      // stops at it once every row before it is written, so the counts say where it stopped.
      // `records` of the error is how many records came before the malformed one (the header included).
      const stop: { malformed?: CsvError } = {};
      const records = csvRecords(job.csv, {
        bom: true,
        relax_column_count: true,
        skip_empty_lines: true,
        skip_records_with_empty_values: true,
        skip_records_with_error: true,
        on_skip: (err) => void (stop.malformed ??= err ?? undefined),
      });
      let header: string[] | undefined;
      let readRow: ((cells: string[], rowNumber: number) => CsvRow) | undefined;
      let rowNumber = 1;
      let recordIndex = 0;
      parsing: for await (const batch of records) {
        for (const record of batch) {
          if (stop.malformed && recordIndex >= Number(stop.malformed.records)) break parsing;
          recordIndex++;
          if (!readRow) {
            header = record;
            validateCsvHeader(header);
            checkRepeatedColumns(header);
            readRow = csvRowReader(header);
            continue;
          }
          rowNumber++;
          const parsed = readRow(record, rowNumber);
          if (!parsed.ok) {
            refuse(progress, parsed.error);
            continue;
          }
          const row = { row: rowNumber, email: parsed.email, data: parsed.data, json: parsed.json };
          const overBudget = claimFields(known, row);
          if (overBudget) {
            refuse(progress, overBudget);
            continue;
          }
          const lane = lanes[laneOf(row.email)];
          lane.rows.push(row);
          if (lane.rows.length >= BATCH_ROWS) {
            await flush(lane);
            if (progressFailed) throw progressFailed.err;
            saveProgress.kick();
          }
        }
      }
      for (const lane of lanes) await flush(lane);
      for (const lane of lanes) await lane.writing;
      await saveProgress.stop();
      if (stop.malformed) throw stop.malformed;
      if (!header) throw badRequest('The CSV file has no header row');
      await this.finish(job.id, progress, 'completed');
    } catch (err) {
      await Promise.allSettled([...lanes.map((l) => l.writing), saveProgress.stop()]);
      if (err instanceof ImportJobGone) {
        this.logger.info({ jobId: job.id, projectId: job.project_id }, 'import stopped: its project was wiped');
        return;
      }
      const expected = err instanceof AppError || err instanceof CsvError;
      if (!expected) this.logger.error({ err, jobId: job.id }, 'import failed');
      await this.finish(job.id, progress, 'failed', failureMessage(err));
    }
  }

  private async finish(jobId: string, progress: Progress, status: 'completed' | 'failed', failure?: string) {
    const errors = [...progress.errors].sort((a, b) => a.row - b.row);
    await this.jobs.importProgress(jobId, { ...progress, errors, totalRows: progress.processed });
    await this.jobs.finishImport(jobId, status, failure);
  }

  /**
   * Writes one batch and counts it once committed. When a row of it is refused (another writer
   * took the last free custom field meanwhile), the batch is written again row by row so only
   * that row fails.
   */
  private async commitBatch(job: ImportJobRow, rows: CsvContact[], progress: Progress): Promise<void> {
    try {
      settle(progress, await this.writeBatch(job, rows));
      return;
    } catch (err) {
      if (!refusesRow(err)) throw err;
      // A batch of one row (e.g. a writer lane's last) is that row's refusal.
      if (rows.length === 1) return refuse(progress, rowError(rows[0].row, rows[0].email, refusalReason(err)));
    }
    for (const row of rows) {
      try {
        settle(progress, await this.writeBatch(job, [row]));
      } catch (err) {
        if (!refusesRow(err)) throw err;
        refuse(progress, rowError(row.row, row.email, refusalReason(err)));
      }
    }
  }

  /**
   * One transaction per batch: rows for the same email (in the file or already stored) patch
   * one contact in file order, so a re-run updates in place and duplicates create nothing twice.
   * New contacts and their `imported` messages go in one statement; existing ones are merged here.
   */
  private async writeBatch(job: ImportJobRow, rows: CsvContact[]): Promise<{ imported: number; updated: number }> {
    const written = { imported: 0, updated: 0 };
    if (!rows.length) return written;
    const projectId = job.project_id;
    let release: (() => Promise<void>) | undefined;
    await withTransaction(this.batches.db, async (tx) => {
      if (!(await this.jobs.holdImport(tx, job.id))) throw new ImportJobGone();
      const locked = await this.batches.lockByEmails(
        tx,
        projectId,
        rows.map((r) => r.email),
      );
      const existing = new Map(locked.map((c) => [c.email.toLowerCase(), c]));
      // `json` is dropped once a later row of the same email changes `data`.
      const fresh = new Map<string, { email: string; data: Record<string, unknown>; json?: string }>();
      const changed = new Map<string, ContactRow>();
      for (const row of rows) {
        const key = row.email.toLowerCase();
        const known = existing.get(key);
        const first = fresh.get(key);
        if (known) {
          const merged = applyDataPatch(known.data, row.data);
          if (merged.changed) {
            const next = { ...known, data: merged.data };
            existing.set(key, next);
            changed.set(known.id, next);
          }
          written.updated++;
        } else if (first) {
          first.data = applyDataPatch(first.data, row.data).data;
          first.json = undefined;
          written.updated++;
        } else {
          fresh.set(key, { email: row.email, data: row.data, json: row.json });
          written.imported++;
        }
      }
      release = await this.caps?.reserve(projectId, 'contacts', fresh.size);
      const news = [...fresh.values()];
      await this.contacts.recordTypesOfMany(tx, projectId, [
        ...news.map((f) => f.data),
        ...[...changed.values()].map((c) => c.data),
      ]);
      const context = outgoingContext();
      const inserted = news.length
        ? await this.batches.insertWithImported(
            tx,
            projectId,
            importLines(news.map((f) => ({ email: f.email, json: f.json ?? JSON.stringify(f.data) }))),
            {
              subject: CONTACTS_TOPICS.imported.subject,
              requestId: context?.requestId ?? null,
              traceparent: context?.traceparent ?? null,
            },
          )
        : new Set<string>();
      const updated = await this.batches.updateMany(tx, projectId, [...changed.values()]);
      // Created concurrently by another writer since the lock: patch them through the single-row path.
      for (const f of inserted.size < news.length ? news : []) {
        if (inserted.has(f.email.toLowerCase())) continue;
        await this.contacts.upsertIn(
          tx,
          { projectId, email: f.email, defaultSubscribed: true, data: f.data, mode: 'set' },
          { patch: f.data, oneOff: {} },
        );
      }
      await enqueueMany(tx, updated.map(contactUpdated));
    }).catch(async (err) => {
      await release?.();
      throw err;
    });
    return written;
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
