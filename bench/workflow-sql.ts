/**
 * No services, no bus: the workflows engine's SQL for TRIGGER -> CONDITION -> SEND_EMAIL -> EXIT alone, on a
 * throwaway database with the workflows migrations and one enabled workflow. `BENCH_EXECUTIONS` enrolments through
 * `ExecutionsStore.enrolTriggered` in batches of `BENCH_BATCH` (bench/workflow.ts averages about 11), then claims of
 * `BENCH_CLAIM` until none is due, then one `finishSteps` per claim with the chain's four history rows, as the
 * engine writes them. Prints the CPU milliseconds per execution of its one PostgreSQL backend (from /proc, 10 ms
 * resolution) and of this process, for each of the three statements.
 *
 *   node --import tsx bench/workflow-sql.ts
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createPool } from '@svc/lib/db';
import { createTestDatabase } from '@svc/lib/test-database';
import { type ExecutionRow, ExecutionsStore } from '../services/workflows/src/store/executions-store.js';
import { migrations } from '../services/workflows/src/store/migrations.js';

const N = Number(process.env.BENCH_EXECUTIONS ?? 10000);
const BATCH = Number(process.env.BENCH_BATCH ?? 11);
const CLAIM = Number(process.env.BENCH_CLAIM ?? 40);

const db = await createTestDatabase('bench_workflowsql', migrations);
const url = (db.pool as unknown as { options: { connectionString: string } }).options.connectionString;
const pool = createPool(url, 1);
try {
  const store = new ExecutionsStore(pool);
  const project = randomUUID();
  const workflow = randomUUID();
  const steps = { TRIGGER: randomUUID(), CONDITION: randomUUID(), SEND_EMAIL: randomUUID(), EXIT: randomUUID() };
  await pool.query(
    `INSERT INTO workflows (id, project_id, name, trigger_type, trigger_config, enabled)
     VALUES ($1, $2, 'bench', 'EVENT', '{"eventName": "bench.signup"}', true)`,
    [workflow, project],
  );
  for (const [type, id] of Object.entries(steps)) {
    await pool.query('INSERT INTO workflow_steps (id, workflow_id, type, name) VALUES ($1, $2, $3, $3)', [
      id,
      workflow,
      type,
    ]);
  }
  const backend = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const backendMs = () => {
    const f = readFileSync(`/proc/${backend}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  };
  const measure = async (label: string, run: () => Promise<void>) => {
    const [pg0, node0] = [backendMs(), process.cpuUsage()];
    await run();
    const node = process.cpuUsage(node0);
    const perExecution = (ms: number) => (ms / N).toFixed(3);
    console.log(
      `${label}: PostgreSQL ${perExecution(backendMs() - pg0)} ms, ` +
        `this process ${perExecution((node.user + node.system) / 1000)} ms per execution`,
    );
  };

  await measure(`enrolTriggered, batches of ${BATCH}`, async () => {
    for (let i = 0; i < N; i += BATCH) {
      const events = Array.from({ length: Math.min(BATCH, N - i) }, (_, k) => ({
        projectId: project,
        contactId: randomUUID(),
        eventName: 'bench.signup',
        context: { event: { id: randomUUID(), name: 'bench.signup', data: { n: i + k } } },
        triggerKey: randomUUID(),
        since: new Date(),
      }));
      await store.enrolTriggered(pool, events);
    }
  });
  const claims: ExecutionRow[][] = [];
  await measure(`claim, ${CLAIM} at a time`, async () => {
    for (let rows = await store.claim(CLAIM, 120_000); rows.length; rows = await store.claim(CLAIM, 120_000)) {
      claims.push(rows);
    }
  });
  await measure('finishSteps, the chain of four steps', async () => {
    for (const rows of claims) {
      await store.finishSteps(
        rows.map((row) => {
          let at = Date.now();
          const fresh = (stepType: keyof typeof steps) => ({
            id: randomUUID(),
            stepId: steps[stepType],
            stepType,
            startedAt: new Date(at++),
          });
          const chained = (stepType: keyof typeof steps, output?: unknown) => ({
            fresh: fresh(stepType),
            history: { status: 'COMPLETED' as const, output },
          });
          return {
            row,
            fresh: fresh('TRIGGER'),
            firstVisit: true,
            outcome: {
              history: { status: 'COMPLETED' as const },
              execution: { status: 'EXITED' as const, nextStepId: null },
            },
            chain: [
              chained('CONDITION', { branch: 'yes' }),
              chained('SEND_EMAIL', { emailId: randomUUID(), status: 'queued' }),
              chained('EXIT'),
            ],
          };
        }),
      );
    }
  });
} finally {
  await pool.end();
  await db.drop();
}
