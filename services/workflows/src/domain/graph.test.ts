import { isAppError } from '@svc/lib/errors';
import { assertNoBusyCycle, assertRunnable, type GraphStep, type GraphTransition } from './graph.js';

const step = (id: string, type: GraphStep['type']): GraphStep => ({ id, type, name: id });
let n = 0;
const edge = (from: string, to: string, label: Partial<GraphTransition> = {}): GraphTransition => ({
  id: `t${++n}`,
  fromStepId: from,
  toStepId: to,
  branch: null,
  waitOutcome: null,
  ...label,
});

function refusal(steps: GraphStep[], ts: GraphTransition[]) {
  try {
    assertRunnable(steps, ts);
  } catch (err) {
    if (isAppError(err)) return { status: err.status, step: err.details?.stepId, message: err.message };
    throw err;
  }
  return null;
}

describe('assertRunnable', () => {
  const trigger = step('trigger', 'TRIGGER');

  test('a chain trigger -> condition (yes/no) -> send / exit runs', () => {
    const steps = [trigger, step('c', 'CONDITION'), step('s', 'SEND_EMAIL'), step('x', 'EXIT')];
    const ts = [edge('trigger', 'c'), edge('c', 's', { branch: 'yes' }), edge('c', 'x', { branch: 'no' })];
    expect(refusal(steps, ts)).toBeNull();
  });

  test('an unreachable step is named', () => {
    const steps = [trigger, step('s', 'SEND_EMAIL'), step('lost', 'EXIT')];
    expect(refusal(steps, [edge('trigger', 's')])).toMatchObject({ status: 422, step: 'lost' });
  });

  test('a CONDITION without both branches is named', () => {
    const steps = [trigger, step('c', 'CONDITION'), step('s', 'SEND_EMAIL')];
    expect(refusal(steps, [edge('trigger', 'c'), edge('c', 's', { branch: 'yes' })])).toMatchObject({ step: 'c' });
  });

  test('a cycle without a wait is refused; through a DELAY it is allowed', () => {
    const busy = [trigger, step('a', 'SEND_EMAIL'), step('b', 'WEBHOOK')];
    expect(refusal(busy, [edge('trigger', 'a'), edge('a', 'b'), edge('b', 'a')])?.message).toContain('cycle');
    const paced = [trigger, step('a', 'SEND_EMAIL'), step('d', 'DELAY')];
    expect(refusal(paced, [edge('trigger', 'a'), edge('a', 'd'), edge('d', 'a')])).toBeNull();
  });

  test("a cycle that sends and waits only for its own mail's email.sent is refused; another wait breaks it", () => {
    const wait = (id: string, waitsFor: string): GraphStep => ({ ...step(id, 'WAIT_FOR_EVENT'), waitsFor });
    const loop = (w: GraphStep, extra: GraphTransition[] = []) =>
      refusal(
        [trigger, step('s', 'SEND_EMAIL'), w, step('c', 'CONDITION'), step('x', 'EXIT')],
        [
          edge('trigger', 's'),
          edge('s', w.id),
          edge(w.id, 'c', { waitOutcome: 'EVENT' }),
          edge(w.id, 'x', { waitOutcome: 'TIMEOUT' }),
          edge('c', 's', { branch: 'yes' }),
          edge('c', 'x', { branch: 'no' }),
          ...extra,
        ],
      );
    for (const name of ['email.sent', 'email.delivery']) {
      expect(loop(wait('w', name))).toMatchObject({ status: 422, step: 's', message: expect.stringContaining(name) });
    }
    // Waiting for a click (someone acts), or looping only through the timeout, is no mail loop.
    expect(loop(wait('w', 'email.click'))).toBeNull();
    const steps = [trigger, step('s', 'SEND_EMAIL'), wait('w', 'email.sent'), step('x', 'EXIT')];
    const viaTimeout = [
      edge('trigger', 's'),
      edge('s', 'w'),
      edge('w', 's', { waitOutcome: 'TIMEOUT' }),
      edge('w', 'x', { waitOutcome: 'EVENT' }),
    ];
    expect(refusal(steps, viaTimeout)).toBeNull();
    // Also on a structural edit of an enabled workflow.
    expect(() => assertNoBusyCycle(steps, [edge('s', 'w'), edge('w', 's', { waitOutcome: 'EVENT' })])).toThrow(
      'email.sent',
    );
  });

  test('a trigger with no next step, and a dangling transition, are refused', () => {
    expect(refusal([trigger], [])).toMatchObject({ step: 'trigger' });
    const steps = [trigger, step('s', 'SEND_EMAIL')];
    expect(refusal(steps, [edge('trigger', 's'), edge('s', 'gone')])).toMatchObject({ status: 422 });
  });
});

describe('assertNoBusyCycle (structural edits of an enabled workflow)', () => {
  test('refuses a cycle without a wait, also among unreachable steps; allows the rest of an unfinished graph', () => {
    const steps = [step('trigger', 'TRIGGER'), step('u', 'UPDATE_CONTACT'), step('lost', 'EXIT'), step('d', 'DELAY')];
    expect(() => assertNoBusyCycle(steps, [edge('trigger', 'u'), edge('u', 'u')])).toThrow('cycle');
    expect(() => assertNoBusyCycle(steps, [edge('trigger', 'u'), edge('lost', 'd'), edge('d', 'u')])).not.toThrow();
    expect(() => assertNoBusyCycle(steps, [edge('trigger', 'u'), edge('u', 'd'), edge('d', 'u')])).not.toThrow();
  });
});
