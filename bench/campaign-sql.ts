/**
 * Benchmark (not a test): the campaigns service's SQL for one campaign's recipients, no services, no bus, on a
 * throwaway database with the campaigns migrations. BENCH_RECIPIENTS recipients are written as the snapshot writes
 * them (batches of 1000), analysed, then handed over in rounds of 1000 (2 QueueEmails batches of 500, every
 * recipient queued) and each round's recipients marked sent in batches of BENCH_MARK (the lifecycle consumer's
 * `markMany`), each round preceded by the send-window count. Two ways of recording the hand-over, alternated
 * BENCH_ROUNDS times: `per-row` (every recipient's answer written on its row, the release before the checkpoint)
 * and `checkpoint` (`recordHandOverBatch`: one write per round). Prints the CPU ms per recipient of the one
 * PostgreSQL backend and of this process, per phase.
 *
 *   node --import tsx bench/campaign-sql.ts
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createTestDatabase } from '@svc/lib/test-database';
import { CampaignsStore } from '../services/campaigns/src/store/campaigns-store.js';
import { FanOutStore } from '../services/campaigns/src/store/fan-out-store.js';
import { migrations } from '../services/campaigns/src/store/migrations.js';
import { RecipientsStore } from '../services/campaigns/src/store/recipients-store.js';
import { insertSendingCampaign } from '../services/campaigns/src/store/test-campaigns.js';
import { cpuSeconds, fmt, machineLine, run } from './support.js';

const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 50_000);
const MARK = Number(process.env.BENCH_MARK ?? 70);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const ROUND = 1000;
const BATCH = 500;

type Mode = 'per-row' | 'checkpoint';

run(
  async () => {
    console.log(machineLine());
    const db = await createTestDatabase('bench_campaignsql', migrations);
    // One connection: its backend's CPU is the database's.
    const pool = new pg.Pool({ connectionString: db.pool.options.connectionString, max: 1, idleTimeoutMillis: 0 });
    pool.on('error', () => {}); // the drop at the end ends its idle connection
    const client = await pool.connect();
    const campaigns = new CampaignsStore(pool as never);
    const fanOut = new FanOutStore(pool as never);
    const recipients = new RecipientsStore(pool as never);
    const backend = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    client.release();
    const project = randomUUID();
    const totals = new Map<string, { pg: number; node: number; n: number }>();
    const add = (k: string, pg: number, node: number, n: number) => {
      const t = totals.get(k) ?? { pg: 0, node: 0, n: 0 };
      totals.set(k, { pg: t.pg + pg, node: t.node + node, n: t.n + n });
    };
    async function phase<T>(k: string, n: number, f: () => Promise<T>): Promise<T> {
      const pg0 = cpuSeconds(backend);
      const node0 = process.cpuUsage();
      const out = await f();
      const node = process.cpuUsage(node0);
      add(k, cpuSeconds(backend) - pg0, (node.user + node.system) / 1e6, n);
      return out;
    }

    async function one(mode: Mode): Promise<void> {
      const id = await insertSendingCampaign(campaigns, project);
      const claimed = (await fanOut.claim(10, 600)).find((c) => c.id === id)!;
      const token = claimed.lease_token!;
      const ids = Array.from({ length: RECIPIENTS }, () => randomUUID()).sort();
      await phase(`${mode} snapshot insert`, RECIPIENTS, async () => {
        for (let i = 0; i < ids.length; i += 1000) {
          const batch = ids.slice(i, i + 1000).map((c, j) => ({
            contactId: c,
            email: `reader${i + j}@campaign.example`,
            subscribed: true,
            variables: { firstName: `Reader${i + j}`, plan: 'pro' },
          }));
          await fanOut.addSnapshotBatch(id, token, batch, batch[batch.length - 1].contactId, false);
        }
        await fanOut.addSnapshotBatch(id, token, [], null, true);
        await fanOut.analyzeRecipients();
      });
      let after: string | null = null;
      for (;;) {
        await phase(`${mode} window count`, 0, () => fanOut.inFlight(id));
        const pending = await phase(`${mode} pending read`, 0, () =>
          mode === 'checkpoint'
            ? fanOut.pending(id, after, ROUND)
            : pool
                .query(
                  `SELECT contact_id, email, subscribed, variables FROM campaign_recipients
                 WHERE campaign_id = $1 AND handed_over_at IS NULL ORDER BY contact_id LIMIT $2`,
                  [id, ROUND],
                )
                .then((r) => r.rows as { contact_id: string }[]),
        );
        if (!pending.length) break;
        const results = pending.map((r) => ({
          contactId: r.contact_id,
          emailId: randomUUID(),
          status: 'queued' as const,
          error: null,
        }));
        await phase(`${mode} hand-over record`, pending.length, async () => {
          if (mode === 'checkpoint') {
            await fanOut.recordHandOverBatch(id, token, results, pending[pending.length - 1].contact_id);
          } else {
            for (let i = 0; i < results.length; i += BATCH)
              await fanOut.recordHandOver(id, results.slice(i, i + BATCH));
          }
        });
        after = pending[pending.length - 1].contact_id;
        await phase(`${mode} sent marks`, pending.length, async () => {
          const at = new Date();
          for (let i = 0; i < pending.length; i += MARK) {
            const marks = pending
              .slice(i, i + MARK)
              .map((r) => ({ campaignId: id, contactId: r.contact_id, step: 'sent' as const, at }));
            const tx = await pool.connect();
            await tx.query('BEGIN');
            await recipients.markMany(tx, marks);
            await tx.query('COMMIT');
            tx.release();
          }
        });
      }
      if (!(await fanOut.finish(id, token))) throw new Error(`${mode}: campaign not finished`);
    }

    try {
      for (let r = 0; r < ROUNDS; r++) for (const mode of ['per-row', 'checkpoint'] as Mode[]) await one(mode);
    } finally {
      await pool.end();
      await db.drop();
    }

    console.log(
      `${fmt(RECIPIENTS)} recipients per campaign, ${ROUNDS} campaigns per way; ` +
        'CPU ms per recipient (PostgreSQL backend / this process):',
    );
    const per = (s: number) => fmt((1000 * s) / (RECIPIENTS * ROUNDS), 4);
    for (const mode of ['per-row', 'checkpoint']) {
      let pg = 0;
      let node = 0;
      for (const [k, t] of totals) {
        if (!k.startsWith(mode)) continue;
        console.log(`  ${k}: ${per(t.pg)} / ${per(t.node)}`);
        pg += t.pg;
        node += t.node;
      }
      console.log(`  ${mode} in all: ${per(pg)} / ${per(node)}`);
    }
  },
  import.meta.url,
);
