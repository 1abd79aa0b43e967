import { CoalescingTask } from './coalescing-task.js';
import {
  childTraceparent,
  contextFrom,
  currentContext,
  formatTraceparent,
  logFields,
  messageContext,
  mintTraceparent,
  outgoingContext,
  parseTraceparent,
  runInContext,
} from './request-context.js';

const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('traceparent', () => {
  test('a valid header is read field by field', () => {
    expect(parseTraceparent(VALID)).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      parentId: '00f067aa0ba902b7',
      flags: '01',
    });
    expect(formatTraceparent(parseTraceparent(VALID)!)).toBe(VALID);
  });

  test.each([
    ['missing', undefined],
    ['empty', ''],
    ['upper-case hex', VALID.toUpperCase()],
    ['version ff', VALID.replace(/^00/, 'ff')],
    ['all-zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['all-zero parent id', `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`],
    ['short trace id', '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01'],
    ['version 00 with extra fields', `${VALID}-extra`],
    ['garbage', 'not a traceparent'],
  ])('%s is refused', (_what, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });

  test('a later version is read by its first four fields', () => {
    expect(parseTraceparent(`01-${VALID.slice(3)}-future`)).toMatchObject({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
  });

  test('minted: version 00, 16-byte trace id, 8-byte span id, sampled, and parseable', () => {
    const header = formatTraceparent(mintTraceparent());
    expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(parseTraceparent(header)).toBeDefined();
    expect(formatTraceparent(mintTraceparent())).not.toBe(header);
  });
});

describe('request context', () => {
  test('honours a valid incoming request id and traceparent', () => {
    expect(contextFrom({ requestId: 'req-12345678', traceparent: VALID })).toEqual({
      requestId: 'req-12345678',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      parentId: '00f067aa0ba902b7',
      flags: '01',
    });
  });

  test('mints what is missing or malformed', () => {
    const ctx = contextFrom({ requestId: 'has spaces in it', traceparent: 'bogus' });
    expect(ctx.requestId).toMatch(/^req_[0-9a-f]{32}$/);
    expect(ctx.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(contextFrom({}).requestId).not.toBe(ctx.requestId);
  });

  test('a bus message without either header has no context', () => {
    expect(messageContext({})).toBeUndefined();
    expect(messageContext({ requestId: 'req-12345678' })?.requestId).toBe('req-12345678');
  });

  test('the next hop keeps the trace id and request id with a new span id', () => {
    const ctx = contextFrom({ requestId: 'req-12345678', traceparent: VALID });
    const a = parseTraceparent(childTraceparent(ctx))!;
    const b = parseTraceparent(childTraceparent(ctx))!;
    expect(a.traceId).toBe(ctx.traceId);
    expect(a.flags).toBe('01');
    expect(new Set([a.parentId, b.parentId, ctx.parentId]).size).toBe(3);
  });

  test('follows async work started inside it, and is absent outside', async () => {
    const ctx = contextFrom({ requestId: 'req-12345678', traceparent: VALID });
    expect(currentContext()).toBeUndefined();
    expect(outgoingContext()).toBeUndefined();
    expect(logFields()).toEqual({});
    const inside = await runInContext(ctx, async () => {
      await new Promise((r) => setTimeout(r, 1));
      return { current: currentContext(), fields: logFields(), out: outgoingContext() };
    });
    expect(inside.current).toBe(ctx);
    expect(inside.fields).toEqual({ requestId: 'req-12345678', traceId: ctx.traceId });
    expect(inside.out?.requestId).toBe('req-12345678');
    expect(runInContext(ctx, () => runInContext(undefined, currentContext))).toBeUndefined();
  });
});

describe('background work', () => {
  test('a task kicked from inside a request runs outside it', async () => {
    let seen: unknown = 'not run';
    const task = new CoalescingTask(
      async () => {
        seen = currentContext();
      },
      () => undefined,
    );
    runInContext(contextFrom({ requestId: 'req-12345678' }), () => task.kick());
    await task.stop();
    expect(seen).toBeUndefined();
  });
});
