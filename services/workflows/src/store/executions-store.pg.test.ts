import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { ExecutionsStore } from './executions-store.js';
import { migrations } from './migrations.js';

// finishSteps runs as finish_steps() (migration 006): one generic plan per session, planned while the tables may be
// empty, that must reach executions and execution_steps only through their indexes however large they grow.

let db: TestDatabase;
let store: ExecutionsStore;
const workflow = randomUUID();
const project = randomUUID();
const steps = { TRIGGER: randomUUID(), CONDITION: randomUUID(), SEND_EMAIL: randomUUID(), EXIT: randomUUID() };

beforeAll(async () => {
  db = await createTestDatabase('workflows_executions', migrations);
  store = new ExecutionsStore(db.pool);
  await db.pool.query(
    `INSERT INTO workflows (id, project_id, name, trigger_type, trigger_config, enabled)
     VALUES ($1, $2, 'w', 'EVENT', '{"eventName": "signup"}', true)`,
    [workflow, project],
  );
  for (const [type, id] of Object.entries(steps)) {
    await db.pool.query('INSERT INTO workflow_steps (id, workflow_id, type, name) VALUES ($1, $2, $3, $3)', [
      id,
      workflow,
      type,
    ]);
  }
});

afterAll(() => db.drop());

const enrol = (contactId: string) =>
  store.enrolTriggered(db.pool, [
    { projectId: project, contactId, eventName: 'signup', context: {}, triggerKey: randomUUID(), since: new Date() },
  ]);

const chainToExit = (row: Parameters<ExecutionsStore['finishSteps']>[0][number]['row']) => {
  let at = Date.now();
  const fresh = (type: keyof typeof steps) => ({
    id: randomUUID(),
    stepId: steps[type],
    stepType: type,
    startedAt: new Date(at++),
  });
  return {
    row,
    fresh: fresh('TRIGGER'),
    outcome: {
      history: { status: 'COMPLETED' as const },
      execution: { status: 'EXITED' as const, nextStepId: null, contextPatch: { seen: true } },
    },
    chain: [
      { fresh: fresh('CONDITION'), history: { status: 'COMPLETED' as const, output: { branch: 'yes' } } },
      { fresh: fresh('EXIT'), history: { status: 'COMPLETED' as const } },
    ],
  };
};

test('finishSteps writes the outcome, the chained history rows and the new state, only under the lease', async () => {
  const [[enrolled]] = await enrol(randomUUID());
  const [row] = await store.claim(10, 60_000);
  expect(row.id).toBe(enrolled.id);
  const stale = { ...row, lease_token: randomUUID() };
  expect((await store.finishSteps([chainToExit(stale)])).size).toBe(0);

  const written = (await store.finishSteps([chainToExit(row)])).get(row.id)!;
  expect(written).toMatchObject({
    id: row.id,
    status: 'EXITED',
    lease_token: null,
    due_at: null,
    context: { seen: true },
  });
  expect(written.finished_at).toBeInstanceOf(Date);
  const history = await store.steps(row.id);
  expect(history.map((h) => [h.step_type, h.status, h.visit])).toEqual([
    ['TRIGGER', 'COMPLETED', 1],
    ['CONDITION', 'COMPLETED', 1],
    ['EXIT', 'COMPLETED', 1],
  ]);
  expect(history[1].output).toEqual({ branch: 'yes' });
});

test('finish_steps keeps an index-only shape when planned on empty tables', async () => {
  const client = await db.pool.connect();
  try {
    await client.query('DELETE FROM executions');
    const plans: string[] = [];
    client.on('notice', (n) => plans.push(n.message ?? ''));
    await client.query(`LOAD 'auto_explain'`);
    await client.query(
      `SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
       SET auto_explain.log_level = notice; SET client_min_messages = notice`,
    );
    // The session's first call makes the generic plan, with executions and execution_steps empty.
    await client.query(`SELECT * FROM finish_steps('[]')`);
    await client.query('RESET auto_explain.log_min_duration');
    const plan = plans.find((p) => p.includes('Update on executions'));
    expect(plan).toBeDefined();
    expect(plan).toMatch(/Index Scan using executions_pkey/);
    expect(plan).not.toMatch(/Seq Scan on execution/);
    expect(plan).not.toMatch(/Hash/);
  } finally {
    client.release(true);
  }
});
