import { call, type Tenant } from './client.js';

// Client-side helpers of the workflow tests: building a workflow through the API as a person would.

/** A fresh event name (workflows trigger on it; no other test's contacts track it). */
export const uniqueEvent = (tag: string) => `${tag}-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6)}`;

export interface BuiltWorkflow {
  id: string;
  name: string;
  trigger: string;
  /** Step ids by the names given to `buildWorkflow`, and `trigger`. */
  steps: Record<string, string>;
}

export type WorkflowSpec = [
  eventName: string,
  steps: Record<string, { type: string; config?: unknown }>,
  edges: [string, string, Record<string, string>?][],
  opts?: { enable?: boolean; allowReentry?: boolean },
];

/**
 * Creates a workflow of tenant `t` for `eventName` with `steps` (name -> {type, config}) and `edges`
 * ([from, to, label?]; 'trigger' is the entry step), then enables it (unless `enable: false`).
 */
export async function buildWorkflow(
  t: Tenant,
  ...[eventName, steps, edges, opts = {}]: WorkflowSpec
): Promise<BuiltWorkflow> {
  const api = (method: string, url: string, body?: unknown) => call(method, url, body, { key: t.secretKey });
  const w = await api('POST', '/workflows', { name: `wf ${eventName}`, eventName, allowReentry: opts.allowReentry });
  expect(w.status).toBe(201);
  const ids: Record<string, string> = { trigger: w.body.steps[0].id };
  for (const [name, s] of Object.entries(steps)) {
    const r = await api('POST', `/workflows/${w.body.id}/steps`, { type: s.type, name, config: s.config ?? {} });
    expect([r.status, r.body]).toEqual([201, expect.anything()]);
    ids[name] = r.body.id;
  }
  for (const [from, to, label] of edges) {
    const r = await api('POST', `/workflows/${w.body.id}/transitions`, {
      fromStepId: ids[from],
      toStepId: ids[to],
      ...label,
    });
    expect([r.status, r.body]).toEqual([201, expect.anything()]);
  }
  if (opts.enable !== false) {
    const e = await api('PATCH', `/workflows/${w.body.id}`, { enabled: true });
    expect([e.status, e.body.enabled]).toEqual([200, true]);
  }
  return { id: w.body.id, name: w.body.name, trigger: ids.trigger, steps: ids };
}
