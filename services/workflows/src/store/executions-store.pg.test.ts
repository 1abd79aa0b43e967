import { randomUUID } from 'node:crypto';
import { createTestDatabase, explainedPlans, type TestDatabase } from '@svc/lib/test-database';
import { ExecutionsStore } from './executions-store.js';
import { migrations } from './migrations.js';

// finishSteps, claim and enrolTriggered run as finish_steps_v2(), claim_due() and enrol_triggered_v4() (migrations
// 008, 007, 011): one generic plan per session, planned while the tables may be empty, that must reach executions and
// execution_steps only through their indexes however large they grow.

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

test('finishSteps counts earlier visits of a step unless the execution writes its first history rows', async () => {
  const [[enrolled]] = await enrol(randomUUID());
  const [row] = await store.claim(10, 60_000);
  expect(row.id).toBe(enrolled.id);
  // Rows an earlier round left (as a loop through a DELAY would): the TRIGGER and CONDITION visited once already,
  // started before the new rows (whose start times come from this process's clock, in milliseconds).
  for (const type of ['TRIGGER', 'CONDITION'] as const) {
    await db.pool.query(
      `INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, visit, started_at, finished_at)
       VALUES ($1, $2, $3, $4, 'COMPLETED', 1, now() - interval '2 minutes', now() - interval '1 minute')`,
      [randomUUID(), row.id, steps[type], type],
    );
  }
  await store.finishSteps([chainToExit(row)]);
  const counted = (await store.steps(row.id)).slice(2).map((h) => [h.step_type, h.visit]);
  expect(counted).toEqual([
    ['TRIGGER', 2],
    ['CONDITION', 2],
    ['EXIT', 1],
  ]);

  const [[second]] = await enrol(randomUUID());
  const [claimed] = await store.claim(10, 60_000);
  expect(claimed.id).toBe(second.id);
  await store.finishSteps([{ ...chainToExit(claimed), firstVisit: true }]);
  expect((await store.steps(claimed.id)).map((h) => [h.step_type, h.visit])).toEqual([
    ['TRIGGER', 1],
    ['CONDITION', 1],
    ['EXIT', 1],
  ]);
  await db.pool.query('DELETE FROM executions');
});

/** A `signup` event of the contact for enrolTriggered, from mail of `sourceWorkflowId` when given. */
const signup = (contactId: string, sourceWorkflowId?: string) => ({
  projectId: project,
  contactId,
  eventName: 'signup',
  context: {},
  triggerKey: randomUUID(),
  since: new Date(),
  sourceWorkflowId,
});

test('an event from an email a workflow sent does not start that workflow (enrol_triggered_v4)', async () => {
  const event = signup;
  const [own, other] = [randomUUID(), randomUUID()];
  expect(await store.enrolTriggered(db.pool, [event(own, workflow)])).toEqual([[]]);
  const started = await store.enrolTriggered(db.pool, [event(other, randomUUID())]);
  expect(started[0].map((e) => e.workflow_id)).toEqual([workflow]);
  await db.pool.query('DELETE FROM executions');
});

test('enrolTriggered records the chain depth an event gives its executions (0 without one)', async () => {
  const [deep] = await store.enrolTriggered(db.pool, [{ ...signup(randomUUID(), randomUUID()), chainDepth: 4 }]);
  const [plain] = await store.enrolTriggered(db.pool, [signup(randomUUID())]);
  const depth = async (id: string) => (await store.get(db.pool, workflow, id))!.chain_depth;
  expect([await depth(deep[0].id), await depth(plain[0].id)]).toEqual([4, 0]);
  await db.pool.query('DELETE FROM executions');
});

test('busySteps counts the history rows after the last DELAY or WAIT_FOR_EVENT row (all without one)', async () => {
  const [[[looping]], [[delayed]], [[fresh]]] = await Promise.all([1, 2, 3].map(() => enrol(randomUUID())));
  const t0 = Date.now() - 1_000_000;
  const rows = async (execution: string, types: string[]) => {
    for (const [i, type] of types.entries()) {
      await db.pool.query(
        `INSERT INTO execution_steps (id, execution_id, step_id, step_type, status, started_at)
         VALUES ($1, $2, $3, $4, 'COMPLETED', $5)`,
        [randomUUID(), execution, randomUUID(), type, new Date(t0 + i * 1000)],
      );
    }
  };
  // A busy loop (an old workflow's cycle without a wait), and a loop through a DELAY.
  await rows(looping.id, ['TRIGGER', ...Array.from({ length: 120 }, (_, i) => (i % 2 ? 'SEND_EMAIL' : 'CONDITION'))]);
  await rows(delayed.id, ['TRIGGER', 'SEND_EMAIL', 'DELAY', 'SEND_EMAIL', 'WAIT_FOR_EVENT', 'CONDITION', 'SEND_EMAIL']);
  const busy = await store.busySteps([looping.id, delayed.id, fresh.id]);
  expect(Object.fromEntries(busy)).toEqual({ [looping.id]: 121, [delayed.id]: 2, [fresh.id]: 0 });
  expect(await store.busySteps([])).toEqual(new Map());
  await db.pool.query('DELETE FROM executions');
});

test('enrolTriggered keeps its re-entry rules with a plan made on empty tables', async () => {
  const client = await db.pool.connect();
  try {
    await client.query('DELETE FROM executions');
    const pooled = new ExecutionsStore(db.pool);
    const contact = randomUUID();
    const event = (contactId: string) => signup(contactId);
    // The session's first call plans with executions empty; later calls reuse that plan.
    expect((await pooled.enrolTriggered(client, [event(contact)]))[0]).toHaveLength(1);
    for (let i = 0; i < 50; i++) await pooled.enrolTriggered(client, [event(randomUUID()), event(randomUUID())]);
    // Without allowReentry the contact is never enrolled again, once or twice in one batch.
    const again = await pooled.enrolTriggered(client, [event(contact), event(contact)]);
    expect(again.flat()).toHaveLength(0);
  } finally {
    client.release(true);
    await db.pool.query('DELETE FROM executions');
  }
});

test('enrol_triggered_v4 and finish_steps_v2 reach each row by its keys with plans made on empty tables', async () => {
  const client = await db.pool.connect();
  try {
    await client.query('DELETE FROM executions');
    const session = new ExecutionsStore({ query: client.query.bind(client) } as never);
    const plans = await explainedPlans(client, async () => {
      await client.query('SET auto_explain.log_nested_statements = on');
      // The session's first calls make the generic plans, with executions and execution_steps empty.
      await session.enrolTriggered(client, [
        {
          projectId: project,
          contactId: randomUUID(),
          eventName: 'signup',
          context: {},
          triggerKey: 'k0',
          since: new Date(),
        },
      ]);
      for (let i = 0; i < 20; i++) {
        const events = Array.from({ length: 10 }, (_, k) => ({
          projectId: project,
          contactId: randomUUID(),
          eventName: 'signup',
          context: {},
          triggerKey: `k${i}-${k}`,
          since: new Date(),
        }));
        await session.enrolTriggered(client, events);
        const claimed = await session.claim(10, 60_000);
        await session.finishSteps(claimed.map((r, k) => ({ ...chainToExit(r), firstVisit: k % 2 === 0 })));
      }
    });
    const last = (f: (p: string) => boolean) => plans.filter(f).at(-1) ?? '';
    const insert = last((p) => p.includes('Insert on executions'));
    // The re-entry probe names the workflow and the contact (an anti join on the workflow alone read every row).
    expect(insert).toMatch(/Index Only Scan using executions_contact/);
    expect(insert).toContain('Index Cond: ((workflow_id = w.id) AND (contact_id = e.contact_id))');
    expect(insert).not.toMatch(/Seq Scan|Hash|Rows Removed by Join Filter/);
    const finish = last((p) => p.includes('Update on executions') && p.includes('execution_steps'));
    expect(finish).toMatch(/Index Scan using executions_pkey/);
    // The history writes read the updated rows alone: no join of the batch with itself.
    expect(finish).not.toMatch(/Rows Removed by Join Filter|Seq Scan|Bitmap|Hash/);
  } finally {
    client.release(true);
    await db.pool.query('DELETE FROM executions');
  }
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
