import { randomUUID } from 'node:crypto';
import { createLogger } from '@svc/lib/logger';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { ExecutionsStore, type TriggeredEnrolment } from '../store/executions-store.js';
import { migrations } from '../store/migrations.js';
import { WorkflowsStore } from '../store/workflows-store.js';
import { Executions, MAX_CHAIN_DEPTH } from './executions.js';
import type { ContactsPort } from './ports.js';

// Tracked events reach Executions.eventTracked from the bus consumer, up to 128 at once: the enrolments in hand
// share statements, and an event data field is written once however many events bring it at the same time.

class CountingWorkflows extends WorkflowsStore {
  fieldWrites = 0;
  override async recordEventFields(projectId: string, eventName: string, fields: { field: string; type: string }[]) {
    this.fieldWrites++;
    return super.recordEventFields(projectId, eventName, fields);
  }
}

class CountingExecutions extends ExecutionsStore {
  enrolStatements = 0;
  override async enrolTriggered(...args: Parameters<ExecutionsStore['enrolTriggered']>) {
    this.enrolStatements++;
    return super.enrolTriggered(...args);
  }
}

/** eventTracked neither reads nor writes contacts. */
const noContacts: ContactsPort = {
  get: () => Promise.reject(new Error('not used')),
  getMany: () => Promise.reject(new Error('not used')),
  byEmail: () => Promise.reject(new Error('not used')),
  update: () => Promise.reject(new Error('not used')),
};

let db: TestDatabase;
const project = randomUUID();
const workflow = randomUUID();

beforeAll(async () => {
  db = await createTestDatabase('workflows_enrolment', migrations);
  await db.pool.query(
    `INSERT INTO workflows (id, project_id, name, trigger_type, trigger_config, enabled, allow_reentry)
     VALUES ($1, $2, 'w', 'EVENT', '{"eventName": "signup"}', true, true)`,
    [workflow, project],
  );
  await db.pool.query(`INSERT INTO workflow_steps (id, workflow_id, type, name) VALUES ($1, $2, 'TRIGGER', 't')`, [
    randomUUID(),
    workflow,
  ]);
});

afterAll(() => db.drop());

const tracked = (contactId: string) => ({
  projectId: project,
  contactId,
  eventId: randomUUID(),
  name: 'signup',
  data: { plan: 'pro', seats: 3 },
  at: new Date(),
});

test('events handled at once: each enrolled once, in shared statements, their data fields written once', async () => {
  const workflows = new CountingWorkflows(db.pool);
  const store = new CountingExecutions(db.pool);
  const executions = new Executions(workflows, store, noContacts, createLogger('silent'));
  const events = Array.from({ length: 60 }, () => tracked(randomUUID()));
  await Promise.all(events.map((e) => executions.eventTracked(e)));

  const { rows } = await db.pool.query<{ trigger_key: string }>(
    'SELECT trigger_key FROM executions WHERE workflow_id = $1',
    [workflow],
  );
  expect(rows.map((r) => r.trigger_key).sort()).toEqual(events.map((e) => e.eventId).sort());
  expect(store.enrolStatements).toBeLessThan(events.length);
  expect(workflows.fieldWrites).toBe(1);
  expect(await workflows.eventFields(project, ['signup'])).toEqual([
    { field: 'plan', type: 'string' },
    { field: 'seats', type: 'number' },
  ]);

  // Known fields are not written again; a new field is.
  await executions.eventTracked(tracked(randomUUID()));
  expect(workflows.fieldWrites).toBe(1);
  await executions.eventTracked({ ...tracked(randomUUID()), data: { plan: 'pro', referrer: 'ad' } });
  expect(workflows.fieldWrites).toBe(2);
});

test('an enrolment waits for a field write in flight; a failed one is written again by the next event', async () => {
  const workflows = new CountingWorkflows(db.pool);
  let fail = true;
  workflows.recordEventFields = async function (this: CountingWorkflows, ...args) {
    this.fieldWrites++;
    if (fail) {
      await new Promise((resolve) => setTimeout(resolve, 300)); // still in flight when the second event comes
      throw new Error('database down');
    }
    return WorkflowsStore.prototype.recordEventFields.apply(this, args);
  };
  const executions = new Executions(workflows, new ExecutionsStore(db.pool), noContacts, createLogger('silent'));
  const first = { ...tracked(randomUUID()), data: { coupon: 'x' } };
  const second = { ...tracked(randomUUID()), data: { coupon: 'y' } };
  const out = await Promise.allSettled([executions.eventTracked(first), executions.eventTracked(second)]);
  // The second shared the first's write, so it failed too (its message comes again): neither was enrolled.
  expect(out.map((o) => o.status)).toEqual(['rejected', 'rejected']);
  expect(workflows.fieldWrites).toBe(1);
  const enrolled = (e: TriggeredEnrolment['triggerKey']) =>
    db.pool.query('SELECT 1 FROM executions WHERE trigger_key = $1', [e]).then((r) => r.rowCount);
  expect(await enrolled(first.eventId)).toBe(0);
  fail = false;
  await executions.eventTracked(second);
  expect(workflows.fieldWrites).toBe(2);
  expect(await enrolled(second.eventId)).toBe(1);
});

test('workflow mail starts other workflows one deeper in the chain, and none beyond MAX_CHAIN_DEPTH', async () => {
  const executions = new Executions(
    new WorkflowsStore(db.pool),
    new ExecutionsStore(db.pool),
    noContacts,
    createLogger('silent'),
  );
  const mailed = (sourceDepth: number | undefined, fromWorkflow = true) => ({
    ...tracked(randomUUID()),
    sourceWorkflowId: fromWorkflow ? randomUUID() : undefined,
    sourceDepth,
  });
  const depthOf = async (eventId: string) => {
    const { rows } = await db.pool.query<{ chain_depth: number }>(
      'SELECT chain_depth FROM executions WHERE trigger_key = $1',
      [eventId],
    );
    return rows.map((r) => r.chain_depth);
  };
  const cases: [ReturnType<typeof mailed>, number[]][] = [
    [mailed(undefined, false), [0]], // not workflow mail (or another event)
    [mailed(undefined), [1]], // mail of an execution at depth 0 (proto3 leaves 0 out)
    [mailed(MAX_CHAIN_DEPTH - 1), [MAX_CHAIN_DEPTH]],
    [mailed(MAX_CHAIN_DEPTH), []], // refused: one more link than the limit
  ];
  for (const [event, depths] of cases) {
    await executions.eventTracked(event);
    expect(await depthOf(event.eventId)).toEqual(depths);
  }
});
