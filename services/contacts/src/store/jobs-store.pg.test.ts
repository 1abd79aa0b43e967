import { randomUUID } from 'node:crypto';
import { createLogger } from '@svc/lib/logger';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { JobRunner } from '../domain/job-runner.js';
import { JobsStore, type BulkJobRow } from './jobs-store.js';
import { migrations } from './migrations.js';

// Job claims, leases and the runner's NOTIFY wake-up, on a real PostgreSQL with the service's migrations.

let db: TestDatabase;
let store: JobsStore;

beforeAll(async () => {
  db = await createTestDatabase('contacts_jobs', migrations);
  store = new JobsStore(db.pool);
});

afterAll(() => db.drop());

const bulkJob = () => store.createBulk({ id: randomUUID(), projectId: randomUUID(), operation: 'delete', ids: [] });

test('a running job is never claimed twice while its lease holds, and is queued again once it runs out', async () => {
  const created = await bulkJob();
  const claimed = await store.claimBulk();
  expect(claimed?.id).toBe(created.id);
  expect(await store.claimBulk()).toBeNull();
  expect(await store.requeueExpiredLeases()).toBe(0);

  // The worker died: nothing renews the lease.
  await db.pool.query(`UPDATE bulk_jobs SET locked_until = now() - interval '1 second' WHERE id = $1`, [created.id]);
  expect(await store.requeueExpiredLeases()).toBe(1);
  expect((await store.claimBulk())?.id).toBe(created.id);
});

test('progress writes renew an import lease', async () => {
  const job = await store.createImport({
    id: randomUUID(),
    projectId: randomUUID(),
    filename: 'a.csv',
    csv: Buffer.from('email\n'),
  });
  await store.claimImport();
  await db.pool.query(`UPDATE import_jobs SET locked_until = now() + interval '1 second' WHERE id = $1`, [job.id]);
  await store.importProgress(job.id, { processed: 1, imported: 1, updated: 0, skipped: 0, errors: [] });
  const { rows } = await db.pool.query(
    `SELECT locked_until > now() + interval '60 seconds' AS renewed FROM import_jobs WHERE id = $1`,
    [job.id],
  );
  expect(rows[0].renewed).toBe(true);
});

test('a job queued by another replica wakes the runner through NOTIFY, not only the poll', async () => {
  const ran: string[] = [];
  const runner = new JobRunner(
    db.pool,
    [{ name: 'bulk', claim: () => store.claimBulk(), run: async (job: BulkJobRow) => void ran.push(job.id) }],
    () => store.requeueExpiredLeases(),
    createLogger('silent'),
    60_000, // a poll this slow cannot be what finds the job
  );
  await runner.start();
  try {
    const job = await bulkJob(); // as another replica would: straight into the table, no kick()
    const deadline = Date.now() + 5000;
    while (!ran.includes(job.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(ran).toContain(job.id);
  } finally {
    await runner.stop();
  }
});
