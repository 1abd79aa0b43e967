/**
 * No services, no bus: messaging's SQL for one campaign email's life, on a throwaway database with the messaging
 * migrations. `BENCH_EMAILS` campaign emails queued through `EmailsStore.insertMany` in batches of `BENCH_BATCH`
 * (with the `byDedupeKeys` probe each QueueEmails batch makes), then delivery batches of `BENCH_CLAIM` as the
 * delivery worker writes them in one transaction: `lockDue`, `recordOutcomes` (sent, with the attempt rows), the
 * `deliveries.emails_sent` and `deliveries.campaign_sent` outbox rows and the feed's rows (`enqueueLifecycle`), then
 * the relay's claim (payloads read as text) and mark of the outbox rows. BENCH_DROP_INDEXES=a,b drops indexes first.
 * Prints the CPU milliseconds per email of its one PostgreSQL backend (from /proc, 10 ms resolution) and of this
 * process for each statement.
 *
 *   node --import tsx bench/messaging-sql.ts
 */
import { randomUUID } from 'node:crypto';
import { createPool } from '@svc/lib/db';
import { createTestDatabase } from '@svc/lib/test-database';
import { enqueueLifecycle } from '../services/messaging/src/domain/activity-feed.js';
import {
  campaignSentMessages,
  emailsSentMessages,
  lifecyclePayload,
} from '../services/messaging/src/domain/email-events.js';
import { ActivityStore } from '../services/messaging/src/store/activity-store.js';
import {
  type ClaimedEmail,
  DELIVERY_PLAN_SETTINGS,
  EmailsStore,
  type NewEmail,
} from '../services/messaging/src/store/emails-store.js';
import { migrations } from '../services/messaging/src/store/migrations.js';
import { cpuSeconds } from './support.js';

const N = Number(process.env.BENCH_EMAILS ?? 20000);
const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const CLAIM = Number(process.env.BENCH_CLAIM ?? 100);
/** Statements sent with each delivery batch's BEGIN (e.g. planner settings), to compare. */
const BEGIN = `BEGIN; ${process.env.BENCH_BEGIN ?? DELIVERY_PLAN_SETTINGS}`;
/** Indexes dropped before the run (comma-separated), to weigh what each costs. */
const DROP = (process.env.BENCH_DROP_INDEXES ?? '').split(',').filter(Boolean);

const db = await createTestDatabase('bench_messagingsql', migrations);
const url = (db.pool as unknown as { options: { connectionString: string } }).options.connectionString;
const pool = createPool(url, 1);
try {
  const emails = new EmailsStore(pool);
  const activity = new ActivityStore(pool);
  const project = randomUUID();
  const campaign = randomUUID();
  for (const index of DROP) await pool.query(`DROP INDEX ${index}`);
  const backend = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const backendMs = () => cpuSeconds(backend) * 1000;
  const totals = new Map<string, { pg: number; node: number }>();
  const measure = async <T>(label: string, run: () => Promise<T>): Promise<T> => {
    const [pg0, node0] = [backendMs(), process.cpuUsage()];
    const out = await run();
    const node = process.cpuUsage(node0);
    const t = totals.get(label) ?? { pg: 0, node: 0 };
    t.pg += backendMs() - pg0;
    t.node += (node.user + node.system) / 1000;
    totals.set(label, t);
    return out;
  };

  for (let i = 0; i < N; i += BATCH) {
    const batch: NewEmail[] = Array.from({ length: Math.min(BATCH, N - i) }, (_, k) => {
      const n = i + k;
      const contact = randomUUID();
      return {
        id: randomUUID(),
        project_id: project,
        contact_id: contact,
        to_email: `reader${n}@campaign.example`,
        to_name: '',
        from_email: 'news@camp.test',
        from_name: 'Bench News',
        reply_to: '',
        subject: `Hello Reader${n}, your pro news`,
        html:
          `<h1>Hi Reader${n}</h1><p>You are on the pro plan.</p><p><a href="https://t.camp.test/c/${randomUUID()}">` +
          `Read the issue</a></p><img src="https://t.camp.test/o/${randomUUID()}" width="1" height="1" alt="">`,
        text: `Hi Reader${n}\n\nYou are on the pro plan.\n\nRead the issue: https://t.camp.test/c/${randomUUID()}`,
        headers: { 'List-Unsubscribe': `<https://t.camp.test/u/${randomUUID()}>` },
        template_id: null,
        type: 'MARKETING',
        message_id: `<${randomUUID()}@camp.test>`,
        priority: 2,
        status: 'queued',
        send_id: randomUUID(),
        campaign_id: campaign,
        dedupe_key: `campaign:${campaign}:${contact}`,
      };
    });
    await measure('byDedupeKeys', () =>
      emails.byDedupeKeys(
        project,
        batch.map((e) => e.dedupe_key!),
      ),
    );
    await measure('insertMany', () => pool.query('BEGIN').then(() => emails.insertMany(pool, batch)));
    await pool.query('COMMIT');
  }
  for (;;) {
    await pool.query(BEGIN);
    const rows: ClaimedEmail[] = await measure('lockDue', () => emails.lockDue(pool, CLAIM));
    if (!rows.length) {
      await pool.query('COMMIT');
      break;
    }
    const sent = rows.map((r) => ({ id: r.id, response: '250 2.0.0 Ok: queued as ABC123' }));
    await measure('recordOutcomes', () =>
      emails.recordOutcomes(pool, { sent, retry: [], bounced: [], failed: [] }, true),
    );
    const payloads = rows.map((r) => lifecyclePayload(r, 'sent', { messageId: r.message_id }));
    await measure('outbox + feed insert', () =>
      enqueueLifecycle(pool, activity, [...emailsSentMessages(payloads), ...campaignSentMessages(rows)]),
    );
    await measure('commit', () => pool.query('COMMIT'));
    await measure('relay mark', async () => {
      const { rows: claimed } = await pool.query<{ id: string }>(
        `SELECT id::text, subject, payload::text AS payload, request_id, traceparent FROM outbox
         WHERE published_at IS NULL ORDER BY outbox.id LIMIT 500 FOR UPDATE SKIP LOCKED`,
      );
      await pool.query(`UPDATE outbox SET published_at = now() WHERE id = ANY('{${claimed.map((r) => r.id)}}')`);
    });
  }
  let pgTotal = 0;
  for (const [label, t] of totals) {
    pgTotal += t.pg;
    const perEmail = (ms: number) => (ms / N).toFixed(3);
    console.log(`${label}: PostgreSQL ${perEmail(t.pg)} ms, this process ${perEmail(t.node)} ms per email`);
  }
  console.log(`all: PostgreSQL ${(pgTotal / N).toFixed(3)} ms per email`);
} finally {
  await pool.end();
  await db.drop();
}
