import type { ChildProcess } from 'node:child_process';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { call, eventually, newTenant, platform, uniqueEmail, type Tenant } from './support/client.js';
import { receivedMail, verifiedDomain, waitForMail } from './support/messaging.js';
import { buildWorkflow, uniqueEvent, type WorkflowSpec } from './support/workflows.js';
import { freePort, serviceReady, startPlatform, waitFor } from './support/processes.js';
import pg from 'pg';
import { serviceDatabaseUrl } from '@svc/lib/db';

// The workflow engine beyond the API: the WAIT_FOR_EVENT race, upcoming and usage listings, and
// executions surviving a workflows process killed while they wait and as their delays fall due.

let t: Tenant;
let domain: string;

beforeAll(async () => {
  t = await newTenant();
  domain = (await verifiedDomain(t)).domain;
});

const api = (method: string, url: string, body?: unknown, key = t.secretKey) => call(method, url, body, { key });
const track = (email: string, event: string, data?: Record<string, unknown>) =>
  call('POST', '/v1/track', { email, event, data }, { key: t.publicKey });

/** A workflow of this file's tenant (support/workflows.ts). */
const build = (...spec: WorkflowSpec) => buildWorkflow(t, ...spec);

const send = (subject: string) => ({
  type: 'SEND_EMAIL',
  config: { subject, body: `<p>${subject}</p>`, from: `flows@${domain}` },
});

async function executions(workflowId: string, status?: string) {
  const r = await api('GET', `/workflows/${workflowId}/executions?pageSize=100${status ? `&status=${status}` : ''}`);
  expect(r.status).toBe(200);
  return r.body.data as { id: string; status: string; contactId: string; dueAt?: string }[];
}

const history = async (workflowId: string, executionId: string) => {
  const r = await api('GET', `/workflows/${workflowId}/executions/${executionId}`);
  expect(r.status).toBe(200);
  return r.body.steps as { stepId: string; stepType: string; status: string; output?: any }[];
};

describe('WAIT_FOR_EVENT race', () => {
  let server: Server;
  let url: string;
  const held: ServerResponse[] = [];
  let released = false;
  let requests = 0;

  beforeAll(async () => {
    // Holds every request until the test releases it: the step before the wait is still running.
    server = createServer((req, res) => {
      req.resume();
      requests++;
      if (released) res.writeHead(200).end('ok');
      else held.push(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    for (const res of held) res.end();
    await new Promise((r) => server.close(r));
  });

  test('an awaited event tracked while a step before the wait runs (no wait row yet) resumes it', async () => {
    const start = uniqueEvent('start');
    const paid = uniqueEvent('paid');
    const w = await build(
      start,
      {
        slow: { type: 'WEBHOOK', config: { url } },
        wait: { type: 'WAIT_FOR_EVENT', config: { eventName: paid, timeout: { amount: 10, unit: 'minutes' } } },
        thanks: send('Paid'),
      },
      [
        ['trigger', 'slow'],
        ['slow', 'wait'],
        ['wait', 'thanks', { waitOutcome: 'EVENT' }],
      ],
    );
    // A second workflow triggered by the awaited event: once it has an execution for the contact, the
    // workflows service has handled that event (resuming waits comes first), while the wait was not written.
    const sentinel = await build(paid, { done: { type: 'EXIT' } }, [['trigger', 'done']]);
    const email = uniqueEmail('racer');
    expect((await track(email, start)).status).toBe(200);
    await eventually(async () => (requests ? true : undefined), 15_000, 'webhook request held');
    expect((await track(email, paid, { ref: 'R9' })).status).toBe(200);
    await eventually(async () => ((await executions(sentinel.id)).length === 1 ? true : undefined));
    const [running] = await executions(w.id);
    expect(running.status).toBe('RUNNING'); // still in the WEBHOOK step: no wait row yet
    released = true;
    for (const res of held.splice(0)) res.writeHead(200).end('ok');

    const mail = await waitForMail(email, 1, 20_000);
    expect(mail[0].parsed.subject).toBe('Paid');
    const done = await eventually(async () => {
      const [e] = await executions(w.id);
      return e.status === 'COMPLETED' ? e : undefined;
    });
    const steps = await history(w.id, done.id);
    expect(steps.find((s) => s.stepType === 'WAIT_FOR_EVENT')).toMatchObject({
      status: 'COMPLETED',
      output: { outcome: 'EVENT' },
    });
  });
});

describe('upcoming executions and usage', () => {
  test('/activity/upcoming lists waiting executions with due times; usage endpoints name workflows', async () => {
    const tpl = await api('POST', '/templates', {
      name: 'wf template',
      subject: 'Hello',
      body: '<p>Hello</p>',
      from: `flows@${domain}`,
    });
    expect(tpl.status).toBe(201);
    const ev = uniqueEvent('later');
    const paid = uniqueEvent('paid');
    const delayed = await build(
      ev,
      {
        pause: { type: 'DELAY', config: { amount: 1, unit: 'hours' } },
        mail: { type: 'SEND_EMAIL', config: { templateId: tpl.body.id } },
      },
      [
        ['trigger', 'pause'],
        ['pause', 'mail'],
      ],
    );
    const branching = await build(
      uniqueEvent('branch'),
      {
        check: {
          type: 'CONDITION',
          config: {
            condition: {
              logic: 'OR',
              groups: [
                { filters: [{ field: 'data.plan.tier', operator: 'equals', value: 'pro' }] },
                { filters: [{ field: 'event.data.amount', operator: 'gt', value: 1 }] },
              ],
            },
          },
        },
        wait: { type: 'WAIT_FOR_EVENT', config: { eventName: paid, timeout: { amount: 1, unit: 'days' } } },
      },
      [
        ['trigger', 'check'],
        ['check', 'wait', { branch: 'yes' }],
      ],
      { enable: false },
    );

    const email = uniqueEmail('upcoming');
    const before = Date.now();
    await track(email, ev);
    const [waiting] = await eventually(async () => {
      const l = await executions(delayed.id, 'WAITING');
      return l.length === 1 ? l : undefined;
    });
    const up = await api('GET', '/activity/upcoming');
    expect(up.status).toBe(200);
    const item = up.body.data.find((i: { id: string }) => i.id === waiting.id);
    expect(item).toMatchObject({
      kind: 'execution',
      name: delayed.name,
      workflowId: delayed.id,
      contactId: waiting.contactId,
      step: { id: delayed.steps.pause, name: 'pause', type: 'DELAY' },
    });
    const due = Date.parse(item.dueAt);
    expect(due).toBeGreaterThan(before + 3_500_000);
    expect(due).toBeLessThan(Date.now() + 3_700_000);
    // Another project sees none of it.
    const other = await newTenant();
    const theirs = await call('GET', '/activity/upcoming', undefined, { key: other.secretKey });
    expect(theirs.body.data.map((i: { id: string }) => i.id)).not.toContain(waiting.id);

    const template = await api('GET', `/templates/${tpl.body.id}/usage`);
    expect(template.status).toBe(200);
    expect(template.body.workflows).toEqual([
      { workflowId: delayed.id, workflowName: delayed.name, stepId: delayed.steps.mail, name: 'mail' },
    ]);

    const trigger = await api('GET', `/events/${encodeURIComponent(ev)}/usage`);
    expect(trigger.body.workflows).toEqual([
      {
        id: delayed.id,
        name: delayed.name,
        steps: [{ id: delayed.steps.trigger, name: expect.any(String), type: 'TRIGGER' }],
      },
    ]);
    const awaited = await api('GET', `/events/${encodeURIComponent(paid)}/usage`);
    expect(awaited.body.workflows).toEqual([
      {
        id: branching.id,
        name: branching.name,
        steps: [{ id: branching.steps.wait, name: 'wait', type: 'WAIT_FOR_EVENT' }],
      },
    ]);
    // A field and the data paths below it; `plan` is read as data.plan.
    for (const field of ['plan', 'data.plan', 'data.plan.tier']) {
      const f = await api('GET', `/contacts/fields/${field}/usage`);
      expect([field, f.status]).toEqual([field, 200]);
      expect(f.body.workflows).toEqual([
        {
          id: branching.id,
          name: branching.name,
          steps: [{ id: branching.steps.check, name: 'check', type: 'CONDITION' }],
        },
      ]);
    }
    for (const field of ['email', 'data.planner', 'data.amount']) {
      const f = await api('GET', `/contacts/fields/${field}/usage`);
      expect(f.body.workflows.map((w: { id: string }) => w.id)).not.toContain(branching.id);
    }
    const elsewhere = await call('GET', `/events/${encodeURIComponent(paid)}/usage`, undefined, {
      key: other.secretKey,
    });
    expect(elsewhere.body.workflows).toEqual([]);

    // Cancelled, it is no longer upcoming.
    expect((await api('POST', `/workflows/${delayed.id}/executions/cancel-all`)).status).toBe(200);
    const after = await api('GET', '/activity/upcoming');
    expect(after.body.data.map((i: { id: string }) => i.id)).not.toContain(waiting.id);
  });
});

describe('a SEND_EMAIL run in the chain from its TRIGGER', () => {
  test('rerun from the TRIGGER (a crash before the chain was written): the same email, sent once', async () => {
    const ev = uniqueEvent('chained');
    const w = await build(ev, { mail: send('Chained'), done: { type: 'EXIT' } }, [
      ['trigger', 'mail'],
      ['mail', 'done'],
    ]);
    const email = uniqueEmail('chained');
    expect((await track(email, ev)).status).toBe(200);
    const [first] = await eventually(async () => {
      const l = await executions(w.id, 'EXITED');
      return l.length === 1 ? l : undefined;
    });
    // Steps started in the same millisecond have no set order.
    const byType = (h: Awaited<ReturnType<typeof history>>) =>
      [...h].sort((a, b) => (a.stepType < b.stepType ? -1 : 1));
    const steps = byType(await history(w.id, first.id));
    expect(steps.map((s) => [s.stepType, s.status])).toEqual([
      ['EXIT', 'COMPLETED'],
      ['SEND_EMAIL', 'COMPLETED'],
      ['TRIGGER', 'COMPLETED'],
    ]);
    const emailId = steps[1].output.emailId;
    expect(emailId).toEqual(expect.any(String));
    await waitForMail(email, 1, 20_000);
    // The execution as it was claimed, before the chain's write: on its TRIGGER, with no history row.
    const db = new pg.Client({
      connectionString: serviceDatabaseUrl('workflows', platform.env.DATABASE_URL, platform.env),
    });
    await db.connect();
    try {
      await db.query('DELETE FROM execution_steps WHERE execution_id = $1', [first.id]);
      await db.query(
        `UPDATE executions SET status = 'RUNNING', current_step_id = $2, current_history_id = NULL, due_at = now(),
           finished_at = NULL, lease_token = NULL WHERE id = $1`,
        [first.id, w.steps.trigger],
      );
      await db.query(`SELECT pg_notify('workflow_executions_due', '')`);
    } finally {
      await db.end();
    }
    const again = await eventually(async () => {
      const [e] = await executions(w.id, 'EXITED');
      const h = e && (await history(w.id, e.id));
      return h?.length === 3 ? byType(h) : undefined;
    });
    expect(again[1].output.emailId).toBe(emailId); // the same dedupe key: messaging answers the queued email
    await new Promise((r) => setTimeout(r, 1500));
    expect((await receivedMail(email)).length).toBe(1);
  });
});

describe('loop guard', () => {
  test('a busy loop of a workflow enabled before such cycles were refused is FAILED after 100 steps', async () => {
    const ev = uniqueEvent('busy');
    const w = await build(
      ev,
      {
        tick: { type: 'UPDATE_CONTACT', config: { data: { side: 'tick' } } },
        tock: { type: 'UPDATE_CONTACT', config: { data: { side: 'tock' } } },
        done: { type: 'EXIT' },
      },
      [
        ['trigger', 'tick'],
        ['tick', 'tock'],
        ['tock', 'done'],
      ],
    );
    // tock -> tick: the cycle without a DELAY or wait that enabling refuses now, written as an older release allowed.
    const db = new pg.Client({
      connectionString: serviceDatabaseUrl('workflows', platform.env.DATABASE_URL, platform.env),
    });
    await db.connect();
    try {
      await db.query('UPDATE workflow_transitions SET to_step_id = $2 WHERE from_step_id = $1', [
        w.steps.tock,
        w.steps.tick,
      ]);
    } finally {
      await db.end();
    }
    try {
      expect((await track(uniqueEmail('busy'), ev)).status).toBe(200);
      const [failed] = await eventually(
        async () => {
          const l = await executions(w.id, 'FAILED');
          return l.length ? l : undefined;
        },
        30_000,
        'the looping execution FAILED',
      );
      const r = await api('GET', `/workflows/${w.id}/executions/${failed.id}`);
      expect(r.body.error).toMatch(/^(tick|tock): /);
      expect(r.body.error).toContain('more than 100 steps without a DELAY or WAIT_FOR_EVENT step');
      const steps = r.body.steps as { stepType: string; status: string; error?: string }[];
      expect(steps.length).toBeGreaterThan(100);
      expect(steps.length).toBeLessThanOrEqual(160);
      const last = steps.filter((s) => s.status === 'FAILED');
      expect(last).toHaveLength(1);
      expect(last[0]).toMatchObject({ stepType: 'UPDATE_CONTACT', error: expect.stringContaining('more than 100') });
    } finally {
      await api('POST', `/workflows/${w.id}/executions/cancel-all`);
      await api('PATCH', `/workflows/${w.id}`, { enabled: false });
    }
  });
});

describe('restart safety', () => {
  /**
   * A second workflows process on the shared database (its own RPC port, and a bus prefix of its own so
   * it never holds the shared platform's messages): it competes for due executions with the platform's
   * one. Its claims expire after 2 s (WORKFLOW_LEASE_MS), so work it dies holding is taken over quickly.
   */
  const env = async () => ({
    ...platform.env,
    WORKFLOWS_PORT: String(await freePort()),
    BUS_PREFIX: `${platform.env.BUS_PREFIX}_wfrestart`,
    WORKFLOW_LEASE_MS: '2000',
    WORKFLOW_POLL_MS: '100',
  });
  const children: ChildProcess[] = [];
  async function startSecond(n: number) {
    const e = await env();
    const child = startPlatform(['workflows'], e, `workflows-restart-${n}`);
    children.push(child);
    await waitFor('second workflows process', () => serviceReady(Number(e.WORKFLOWS_PORT)), child);
    return child;
  }
  const crash = async (child: ChildProcess) => {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  };
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) await crash(c);
  });

  test('a workflows process killed while executions wait and as they fall due: each ends once, one email', async () => {
    const ev = uniqueEvent('restart');
    const w = await build(
      ev,
      { pause: { type: 'DELAY', config: { amount: 8, unit: 'seconds' } }, mail: send('Once'), done: { type: 'EXIT' } },
      [
        ['trigger', 'pause'],
        ['pause', 'mail'],
        ['mail', 'done'],
      ],
    );
    let second = await startSecond(1);
    const emails = Array.from({ length: 30 }, (_, i) => uniqueEmail(`restart${i}`));
    expect((await Promise.all(emails.map((e) => track(e, ev)))).map((r) => r.status)).toEqual(emails.map(() => 200));
    await eventually(async () => ((await executions(w.id, 'WAITING')).length === 30 ? true : undefined));

    // Killed while they wait, then started again.
    await crash(second);
    second = await startSecond(2);
    // Killed again as the delays fall due (some claimed, some mid-SEND_EMAIL), then started again.
    const dueAt = Math.min(...(await executions(w.id, 'WAITING')).map((e) => Date.parse(e.dueAt!)));
    await new Promise((r) => setTimeout(r, Math.max(0, dueAt - Date.now() + 30)));
    await crash(second);
    await startSecond(3);

    const done = await eventually(
      async () => {
        const l = await executions(w.id);
        return l.length === 30 && l.every((e) => e.status === 'EXITED') ? l : undefined;
      },
      30_000,
      '30 executions EXITED',
    );
    for (const e of done) {
      const steps = await history(w.id, e.id);
      expect(steps.filter((s) => s.stepType === 'SEND_EMAIL').map((s) => s.status)).toEqual(['COMPLETED']);
      expect(steps.filter((s) => s.stepType === 'EXIT').map((s) => s.status)).toEqual(['COMPLETED']);
    }
    for (const email of emails) await waitForMail(email, 1, 20_000);
    // Give a duplicate the time it would need to arrive, then count.
    await new Promise((r) => setTimeout(r, 1500));
    for (const email of emails) expect([email, (await receivedMail(email)).length]).toEqual([email, 1]);
  }, 90_000);
});
