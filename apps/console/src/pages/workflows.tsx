import { useState } from 'preact/hooks';
import { ApiError, api, get, post, query } from '../api';
import { ErrorBox, Field, Link, Page, PagedTable, TextArea, navigate, useAction, useLoad, when } from '../ui';

interface Step {
  id: string;
  type: string;
  name: string;
  config: Record<string, unknown>;
}

interface Transition {
  id: string;
  fromStepId: string;
  toStepId: string;
  branch?: string | null;
  waitOutcome?: string | null;
}

interface Workflow {
  id: string;
  name: string;
  enabled: boolean;
  triggerConfig: { eventName?: string };
  steps: Step[];
  transitions: Transition[];
}

const STEP_TYPES: Record<string, unknown> = {
  SEND_EMAIL: { subject: 'Welcome', body: '<p>Hi {{firstName ?? "there"}}</p>', from: '' },
  DELAY: { amount: 1, unit: 'hours' },
  WAIT_FOR_EVENT: { eventName: '', timeout: { amount: 3, unit: 'days' } },
  CONDITION: {
    condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
  },
  WEBHOOK: { url: 'https://example.com/hook', method: 'POST' },
  UPDATE_CONTACT: { data: { stage: 'onboarded' } },
  EXIT: {},
};

export function WorkflowsPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(() => get(`/workflows${query({ page, pageSize: 20 })}`), [page]);
  const [name, setName] = useState('');
  const [eventName, setEventName] = useState('');
  const create = useAction();
  return (
    <Page title="Workflows">
      <form
        class="inline"
        onSubmit={async (e) => {
          e.preventDefault();
          const wf = await create.run(() => post('/workflows', { name, eventName }));
          if (wf) navigate(`/app/workflows/${wf.id}`);
        }}
      >
        <Field
          label="Name"
          name="name"
          value={name}
          error={create.error}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <Field
          label="Trigger event"
          name="eventName"
          value={eventName}
          error={create.error}
          onInput={(e) => setEventName(e.currentTarget.value)}
        />
        <button type="submit" disabled={create.busy}>
          New workflow
        </button>
      </form>
      <ErrorBox error={create.error} />
      <PagedTable<Workflow>
        list={list}
        page={page}
        onPage={setPage}
        empty="No workflows yet."
        columns={[
          { label: 'Name', cell: (w) => <Link href={`/app/workflows/${w.id}`}>{w.name}</Link> },
          { label: 'Trigger', cell: (w) => w.triggerConfig?.eventName },
          { label: 'Enabled', cell: (w) => (w.enabled ? 'yes' : 'no') },
        ]}
      />
    </Page>
  );
}

/** Steps laid out in columns by distance from the trigger, transitions drawn between them. */
function layout(wf: Workflow) {
  const trigger = wf.steps.find((s) => s.type === 'TRIGGER');
  const depth = new Map<string, number>();
  const queue = trigger ? [trigger.id] : [];
  if (trigger) depth.set(trigger.id, 0);
  while (queue.length) {
    const id = queue.shift()!;
    for (const t of wf.transitions.filter((x) => x.fromStepId === id)) {
      if (!depth.has(t.toStepId)) {
        depth.set(t.toStepId, depth.get(id)! + 1);
        queue.push(t.toStepId);
      }
    }
  }
  const maxDepth = Math.max(0, ...depth.values());
  for (const s of wf.steps) if (!depth.has(s.id)) depth.set(s.id, maxDepth + 1);
  const rows = new Map<number, number>();
  const pos = new Map<string, { x: number; y: number }>();
  for (const s of wf.steps) {
    const d = depth.get(s.id)!;
    const r = rows.get(d) ?? 0;
    rows.set(d, r + 1);
    pos.set(s.id, { x: 20 + r * 200, y: 20 + d * 110 });
  }
  const height = 20 + (Math.max(0, ...depth.values()) + 1) * 110;
  const width = 40 + Math.max(1, ...rows.values()) * 200;
  return { pos, width, height };
}

export function WorkflowPage({ id }: { id: string }) {
  const wf = useLoad(() => get<Workflow>(`/workflows/${id}`), [id]);
  const toggle = useAction();
  const edit = useAction();
  const [selected, setSelected] = useState<string | null>(null);
  const w = wf.data;
  const invalidStep =
    toggle.error instanceof ApiError
      ? toggle.error.errors.find((e) => e.field.startsWith('steps.'))?.field.slice(6)
      : null;
  if (!w) return <ErrorBox error={wf.error} />;
  const { pos, width, height } = layout(w);
  const step = w.steps.find((s) => s.id === selected);
  const label = (t: Transition) => t.branch ?? t.waitOutcome ?? '';
  return (
    <Page
      title={w.name}
      actions={
        <button
          type="button"
          onClick={async () => {
            const out = await toggle.run(() => api('PATCH', `/workflows/${id}`, { enabled: !w.enabled }));
            if (out) wf.reload();
          }}
        >
          {w.enabled ? 'Disable' : 'Enable'}
        </button>
      }
    >
      <p>
        Trigger: <code>{w.triggerConfig?.eventName}</code> -{' '}
        <span data-testid="workflow-enabled">{w.enabled ? 'enabled' : 'disabled'}</span>
      </p>
      <ErrorBox error={toggle.error} />
      <svg class="graph" width={width} height={height} role="img" aria-label="Workflow graph">
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto">
            <path d="M 0 0 L 10 5 L 0 10 z" />
          </marker>
        </defs>
        {w.transitions.map((t) => {
          const a = pos.get(t.fromStepId);
          const b = pos.get(t.toStepId);
          if (!a || !b) return null;
          return (
            <g key={t.id}>
              <line x1={a.x + 80} y1={a.y + 50} x2={b.x + 80} y2={b.y} stroke="#666" marker-end="url(#arrow)" />
              {label(t) && (
                <text x={(a.x + b.x) / 2 + 86} y={(a.y + 50 + b.y) / 2} class="edge-label">
                  {label(t)}
                </text>
              )}
            </g>
          );
        })}
        {w.steps.map((s) => {
          const p = pos.get(s.id)!;
          return (
            <g
              key={s.id}
              class={`node ${s.id === invalidStep ? 'invalid' : ''} ${s.id === selected ? 'selected' : ''}`}
              tabIndex={0}
              role="button"
              aria-label={`${s.type} ${s.name}`}
              onClick={() => setSelected(s.id)}
              onKeyDown={(e) => e.key === 'Enter' && setSelected(s.id)}
            >
              <rect x={p.x} y={p.y} width="160" height="50" rx="6" />
              <text x={p.x + 8} y={p.y + 20} class="node-type">
                {s.type}
              </text>
              <text x={p.x + 8} y={p.y + 38}>
                {s.name.slice(0, 22)}
              </text>
            </g>
          );
        })}
      </svg>
      <div class="split">
        <div>
          {step ? (
            <StepEditor key={step.id} wfId={id} step={step} onChanged={wf.reload} action={edit} />
          ) : (
            <p class="muted">Select a step to edit it.</p>
          )}
          <NewStep wfId={id} onChanged={wf.reload} action={edit} />
        </div>
        <div>
          <Transitions wf={w} onChanged={wf.reload} action={edit} />
        </div>
      </div>
      <ErrorBox error={edit.error} />
      <Executions id={id} />
    </Page>
  );
}

type Action = ReturnType<typeof useAction>;

function parseConfig(text: string, action: Action): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    action.setError(new Error(`Config is not valid JSON: ${(e as Error).message}`));
    return undefined;
  }
}

function StepEditor(props: { wfId: string; step: Step; onChanged: () => void; action: Action }) {
  const { step, action } = props;
  const [name, setName] = useState(step.name);
  const [config, setConfig] = useState(JSON.stringify(step.config, null, 2));
  return (
    <form
      aria-label="Edit step"
      onSubmit={async (e) => {
        e.preventDefault();
        const parsed = parseConfig(config, action);
        if (parsed === undefined) return;
        const body = step.type === 'TRIGGER' ? { name } : { name, config: parsed };
        if (await action.run(() => api('PATCH', `/workflows/${props.wfId}/steps/${step.id}`, body))) props.onChanged();
      }}
    >
      <h2>
        {step.type}: {step.name}
      </h2>
      <Field label="Step name" name="stepName" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      {step.type !== 'TRIGGER' && (
        <TextArea
          label="Config (JSON)"
          name="config"
          rows={8}
          value={config}
          error={action.error}
          onInput={(e) => setConfig(e.currentTarget.value)}
        />
      )}
      <button type="submit" disabled={action.busy}>
        Save step
      </button>{' '}
      {step.type !== 'TRIGGER' && (
        <button
          type="button"
          class="danger"
          onClick={async () => {
            const ok = await action.run(() =>
              api('DELETE', `/workflows/${props.wfId}/steps/${step.id}?splice=true`).then(() => true),
            );
            if (ok) props.onChanged();
          }}
        >
          Delete step
        </button>
      )}
    </form>
  );
}

function NewStep(props: { wfId: string; onChanged: () => void; action: Action }) {
  const [type, setType] = useState('SEND_EMAIL');
  const [name, setName] = useState('');
  const [config, setConfig] = useState(JSON.stringify(STEP_TYPES.SEND_EMAIL, null, 2));
  return (
    <form
      aria-label="Add a step"
      onSubmit={async (e) => {
        e.preventDefault();
        const parsed = parseConfig(config, props.action);
        if (parsed === undefined) return;
        const out = await props.action.run(() =>
          post(`/workflows/${props.wfId}/steps`, { type, name: name || undefined, config: parsed }),
        );
        if (out) {
          setName('');
          props.onChanged();
        }
      }}
    >
      <h2>Add a step</h2>
      <div class="field">
        <label for="step-type">Type</label>
        <select
          id="step-type"
          value={type}
          onChange={(e) => {
            setType(e.currentTarget.value);
            setConfig(JSON.stringify(STEP_TYPES[e.currentTarget.value], null, 2));
          }}
        >
          {Object.keys(STEP_TYPES).map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
      </div>
      <Field label="Name" name="newStepName" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <TextArea
        label="Config (JSON)"
        name="newStepConfig"
        rows={6}
        value={config}
        onInput={(e) => setConfig(e.currentTarget.value)}
      />
      <button type="submit" disabled={props.action.busy}>
        Add step
      </button>
    </form>
  );
}

function Transitions(props: { wf: Workflow; onChanged: () => void; action: Action }) {
  const { wf, action } = props;
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [labelValue, setLabelValue] = useState('');
  const fromStep = wf.steps.find((s) => s.id === from);
  const name = (id: string) => wf.steps.find((s) => s.id === id)?.name ?? id;
  return (
    <>
      <h2>Transitions</h2>
      <ul>
        {wf.transitions.map((t) => (
          <li key={t.id}>
            {name(t.fromStepId)} → {name(t.toStepId)} {t.branch && <em>({t.branch})</em>}
            {t.waitOutcome && <em>({t.waitOutcome})</em>}{' '}
            <button
              type="button"
              class="small"
              aria-label={`Delete transition ${name(t.fromStepId)} to ${name(t.toStepId)}`}
              onClick={async () => {
                const ok = await action.run(() =>
                  api('DELETE', `/workflows/${wf.id}/transitions/${t.id}`).then(() => true),
                );
                if (ok) props.onChanged();
              }}
            >
              ✕
            </button>
          </li>
        ))}
      </ul>
      <form
        aria-label="Connect steps"
        onSubmit={async (e) => {
          e.preventDefault();
          const extra =
            fromStep?.type === 'CONDITION'
              ? { branch: labelValue || 'yes' }
              : fromStep?.type === 'WAIT_FOR_EVENT'
                ? { waitOutcome: labelValue || 'EVENT' }
                : {};
          const out = await action.run(() =>
            post(`/workflows/${wf.id}/transitions`, { fromStepId: from, toStepId: to, ...extra }),
          );
          if (out) props.onChanged();
        }}
      >
        <div class="field">
          <label for="t-from">From</label>
          <select id="t-from" value={from} onChange={(e) => setFrom(e.currentTarget.value)}>
            <option value="">Choose...</option>
            {wf.steps.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name} ({s.type})
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="t-to">To</label>
          <select id="t-to" value={to} onChange={(e) => setTo(e.currentTarget.value)}>
            <option value="">Choose...</option>
            {wf.steps
              .filter((s) => s.type !== 'TRIGGER')
              .map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name} ({s.type})
                </option>
              ))}
          </select>
        </div>
        {fromStep?.type === 'CONDITION' && (
          <div class="field">
            <label for="t-branch">Branch</label>
            <select id="t-branch" value={labelValue || 'yes'} onChange={(e) => setLabelValue(e.currentTarget.value)}>
              <option>yes</option>
              <option>no</option>
            </select>
          </div>
        )}
        {fromStep?.type === 'WAIT_FOR_EVENT' && (
          <div class="field">
            <label for="t-outcome">Outcome</label>
            <select id="t-outcome" value={labelValue || 'EVENT'} onChange={(e) => setLabelValue(e.currentTarget.value)}>
              <option>EVENT</option>
              <option>TIMEOUT</option>
            </select>
          </div>
        )}
        <button type="submit" disabled={!from || !to || action.busy}>
          Connect
        </button>
      </form>
    </>
  );
}

function Executions({ id }: { id: string }) {
  const [page, setPage] = useState(1);
  const list = useLoad(() => get(`/workflows/${id}/executions${query({ page, pageSize: 10 })}`), [id, page]);
  const [open, setOpen] = useState<any>(null);
  return (
    <section aria-label="Executions">
      <h2>
        Executions{' '}
        <button type="button" class="small" onClick={list.reload}>
          Refresh
        </button>
      </h2>
      <PagedTable<any>
        list={list}
        page={page}
        onPage={setPage}
        empty="No executions yet."
        columns={[
          { label: 'Started', cell: (x) => when(x.startedAt) },
          {
            label: 'Contact',
            cell: (x) => <Link href={`/app/contacts/${x.contactId}`}>{x.contactId.slice(0, 8)}</Link>,
          },
          { label: 'Status', cell: (x) => x.status, testId: 'execution-status' },
          {
            label: <span class="sr-only">History</span>,
            cell: (x) => (
              <button
                type="button"
                class="small"
                onClick={async () => setOpen(await get(`/workflows/${id}/executions/${x.id}`))}
              >
                History
              </button>
            ),
          },
        ]}
      />
      {open && (
        <ol class="timeline" aria-label="Step history">
          {open.steps.map((s: any) => (
            <li key={s.id}>
              <strong>{s.stepType}</strong> {s.status} <time>{when(s.finishedAt ?? s.startedAt)}</time>{' '}
              {s.output && <code>{JSON.stringify(s.output)}</code>}{' '}
              {s.error && <span class="field-error">{s.error}</span>}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
