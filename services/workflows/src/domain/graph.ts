import { AppError } from '@svc/lib/errors';
import type { StepType } from './workflow-input.js';

export interface GraphStep {
  id: string;
  type: StepType;
  name: string;
  /** A WAIT_FOR_EVENT step's event name. */
  waitsFor?: string;
}
export interface GraphTransition {
  id: string;
  fromStepId: string;
  toStepId: string;
  branch: string | null;
  waitOutcome: string | null;
}

const unrunnable = (step: GraphStep, reason: string) =>
  new AppError({
    code: 'VALIDATION_ERROR',
    status: 422,
    message: `Workflow cannot run: step "${step.name}" (${step.type}) ${reason}`,
    errors: [{ field: `steps.${step.id}`, message: reason, code: 'invalid_graph' }],
    details: { stepId: step.id, stepName: step.name, stepType: step.type },
  });

/** Steps that wait (and so break a busy loop). */
const WAITS: StepType[] = ['DELAY', 'WAIT_FOR_EVENT'];
/** Lifecycle events a SEND_EMAIL step's own mail causes at once, without anyone doing anything. */
const CAUSED_BY_SENDING = new Set(['email.sent', 'email.delivery']);

/**
 * Whether a graph can run, checked when a workflow is enabled: every step reachable from the
 * trigger, each transition between steps of this workflow with the labels its source needs,
 * CONDITION steps with both branches, and no cycle that does not pass a DELAY or WAIT_FOR_EVENT.
 * Throws a 422 naming the first step at fault.
 */
export function assertRunnable(steps: GraphStep[], transitions: GraphTransition[]): void {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const trigger = steps.find((s) => s.type === 'TRIGGER');
  if (!trigger) throw new Error('workflow without a trigger step');
  const out = new Map<string, GraphTransition[]>(steps.map((s) => [s.id, []]));

  for (const t of transitions) {
    const from = byId.get(t.fromStepId);
    const to = byId.get(t.toStepId);
    if (!from || !to) throw unrunnable(from ?? to ?? trigger, `has a dangling transition ${t.id}`);
    out.get(from.id)!.push(t);
  }

  for (const s of steps) {
    const next = out.get(s.id)!;
    if (s.type === 'EXIT' && next.length) throw unrunnable(s, 'is an EXIT step with outgoing transitions');
    if (s.type === 'CONDITION') {
      for (const b of ['yes', 'no']) {
        const n = next.filter((t) => t.branch === b).length;
        if (n !== 1) throw unrunnable(s, `needs exactly one "${b}" branch (has ${n})`);
      }
      if (next.length !== 2) throw unrunnable(s, 'has a transition without a branch');
    } else if (s.type === 'WAIT_FOR_EVENT') {
      for (const o of ['EVENT', 'TIMEOUT']) {
        if (next.filter((t) => t.waitOutcome === o).length > 1) throw unrunnable(s, `has two ${o} transitions`);
      }
      if (next.some((t) => !t.waitOutcome)) throw unrunnable(s, 'has a transition without a waitOutcome');
    } else {
      if (next.length > 1) throw unrunnable(s, 'has more than one outgoing transition');
      if (next.some((t) => t.branch || t.waitOutcome)) throw unrunnable(s, 'has a labelled transition');
    }
  }
  if (!out.get(trigger.id)!.length) throw unrunnable(trigger, 'has no next step');

  const reached = new Set([trigger.id]);
  for (const queue = [trigger.id]; queue.length; ) {
    for (const t of out.get(queue.pop()!)!) {
      if (!reached.has(t.toStepId)) {
        reached.add(t.toStepId);
        queue.push(t.toStepId);
      }
    }
  }
  const unreachable = steps.find((s) => !reached.has(s.id));
  if (unreachable) throw unrunnable(unreachable, 'is not reachable from the trigger');
  assertNoBusyCycle(steps, transitions);
}

/**
 * No cycle that does not pass a DELAY or WAIT_FOR_EVENT step: an execution in one would run its steps without
 * end. Checked when a workflow is enabled (with the rest of assertRunnable) and on each structural edit of an
 * enabled workflow (which may leave steps unreachable while it is being built, but never such a cycle).
 */
export function assertNoBusyCycle(steps: GraphStep[], transitions: GraphTransition[]): void {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const out = new Map<string, GraphTransition[]>(steps.map((s) => [s.id, []]));
  for (const t of transitions) if (byId.has(t.fromStepId) && byId.has(t.toStepId)) out.get(t.fromStepId)!.push(t);
  // A cycle among steps that never wait would spin forever: depth-first search without the waits.
  const state = new Map<string, 'open' | 'done'>();
  const visit = (id: string): GraphStep | undefined => {
    state.set(id, 'open');
    for (const t of out.get(id)!) {
      const to = byId.get(t.toStepId)!;
      if (WAITS.includes(to.type)) continue;
      if (state.get(to.id) === 'open') return to;
      if (!state.has(to.id)) {
        const found = visit(to.id);
        if (found) return found;
      }
    }
    state.set(id, 'done');
    return undefined;
  };
  for (const s of steps) {
    if (WAITS.includes(s.type) || state.has(s.id)) continue;
    const looped = visit(s.id);
    if (looped) throw unrunnable(looped, 'is in a cycle without a DELAY or WAIT_FOR_EVENT step');
  }
  assertNoMailLoop(steps, byId, out);
}

/**
 * No cycle through a SEND_EMAIL step whose only waits are for the email.sent (or email.delivery) event its own
 * mail causes at once: send -> wait for email.sent -> send would mail the contact without end. A DELAY, another
 * event, or a wait's TIMEOUT path breaks such a cycle.
 */
function assertNoMailLoop(steps: GraphStep[], byId: Map<string, GraphStep>, out: Map<string, GraphTransition[]>): void {
  const instant = (s: GraphStep) =>
    s.type === 'WAIT_FOR_EVENT' && s.waitsFor !== undefined && CAUSED_BY_SENDING.has(s.waitsFor);
  const next = (s: GraphStep) =>
    out
      .get(s.id)!
      .filter((t) => !(instant(s) && t.waitOutcome === 'TIMEOUT'))
      .map((t) => byId.get(t.toStepId)!)
      .filter((to) => !WAITS.includes(to.type) || instant(to));
  for (const send of steps) {
    if (send.type !== 'SEND_EMAIL') continue;
    const seen = new Set<string>();
    for (const queue = next(send); queue.length; ) {
      const s = queue.pop()!;
      if (s.id === send.id) {
        throw unrunnable(send, 'is in a cycle whose only wait is for the email.sent or email.delivery of its own mail');
      }
      if (seen.has(s.id)) continue;
      seen.add(s.id);
      queue.push(...next(s));
    }
  }
}
