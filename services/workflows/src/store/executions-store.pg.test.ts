import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { ExecutionsStore } from './executions-store.js';
import { migrations } from './migrations.js';

// finishSteps and claim run as finish_steps() and claim_due() (migrations 006, 007): one generic plan per session,
// planned while the tables may be empty, that must reach executions and execution_steps only through their indexes
// however large they grow.

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

test('claim takes the due executions in due order, up to the limit, and leases them', async () => {
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await enrol(randomUUID()))[0][0].id);
  await db.pool.query(
    `UPDATE executions SET due_at = now() - (array_position($1::uuid[], id) * interval '1 second')
    WHERE id = ANY ($1::uuid[])`,
    [ids],
  );
  const claimed = await store.claim(2, 60_000);
  expect(claimed.map((r) => r.id)).toEqual([ids[2], ids[1]]);
  for (const r of claimed) {
    expect(r.lease_token).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.due_at!.getTime()).toBeGreaterThan(Date.now() + 50_000);
  }
  expect((await store.claim(10, 60_000)).map((r) => r.id)).toEqual([ids[0]]);
  expect(await store.claim(10, 60_000)).toEqual([]);
  await db.pool.query('DELETE FROM executions');
});

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

test('finish_steps and claim_due keep an index-only shape when planned on empty tables', async () => {
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
    await client.query('SELECT * FROM claim_due(10, 1000)');
    await client.query('RESET auto_explain.log_min_duration');
    const [finish, claim] = ['finish_steps', 'claim_due'].map((f) =>
      plans.find(
        (p) =>
          p.includes('Update on executions') &&
          !p.includes(`FROM ${f}(`) &&
          p.includes(f === 'claim_due' ? 'LockRows' : 'execution_steps'),
      ),
    );
    expect(finish).toMatch(/Index Scan using executions_pkey/);
    expect(finish).not.toMatch(/Seq Scan on execution|Hash/);
    // Claims walk executions_due in order and stop at the limit: no sort of every due row.
    expect(claim).toMatch(/Index Scan using executions_due/);
    expect(claim).toMatch(/Index Scan using executions_pkey/);
    expect(claim).not.toMatch(/Seq Scan|Bitmap|Sort|Hash/);
  } finally {
    client.release(true);
  }
});
