import { AppError } from '@svc/lib/errors';
import { parseNewStep } from './workflow-input.js';

/** The envelope's field errors of a step body that must be refused. */
function refused(body: unknown) {
  try {
    parseNewStep(body);
  } catch (err) {
    if (err instanceof AppError) return err.errors?.map((e) => ({ field: e.field, code: e.code }));
  }
  throw new Error('accepted');
}

const mail = { subject: 'Hi', body: '<p>x</p>', from: 'team@example.com' };
const hook = (headers: Record<string, string>) => ({
  type: 'WEBHOOK',
  config: { url: 'https://hooks.example.com/x', headers },
});

describe('step configs', () => {
  test('SEND_EMAIL: subject and sender names are one line (no header injection), as on /v1/send', () => {
    expect(refused({ type: 'SEND_EMAIL', config: { ...mail, subject: 'Hi\r\nBcc: x@evil.example' } })).toEqual([
      { field: 'config.subject', code: 'invalid_string' },
    ]);
    expect(refused({ type: 'SEND_EMAIL', config: { ...mail, fromName: 'Team\nBcc: x@evil.example' } })).toEqual([
      { field: 'config.fromName', code: 'invalid_string' },
    ]);
    const named = { ...mail, from: { name: 'Team\r\nX: y', email: 'team@example.com' } };
    expect(refused({ type: 'SEND_EMAIL', config: named })?.map((e) => e.field)).toContain('config.from.name');
    const ok = parseNewStep({ type: 'SEND_EMAIL', config: { ...mail, fromName: 'Team', from: 'team@example.com' } });
    expect(ok.config).toMatchObject({ subject: 'Hi', fromName: 'Team' });
  });

  test('WEBHOOK headers: names are HTTP tokens, values have no line breaks, framing headers are refused', () => {
    expect(refused(hook({ 'X-A\r\nX-B': 'v' }))).toEqual([
      { field: 'config.headers.X-A\r\nX-B', code: 'invalid_header_name' },
    ]);
    expect(refused(hook({ 'X A': 'v' }))?.[0].code).toBe('invalid_header_name');
    expect(refused(hook({ '': 'v' }))?.[0].code).toBe('invalid_header_name');
    expect(refused(hook({ 'X-Team': 'growth\r\nX-Injected: 1' }))).toEqual([
      { field: 'config.headers.X-Team', code: 'invalid_string' },
    ]);
    expect(refused(hook({ 'X-Team': '\u65e5\u672c' }))?.[0].code).toBe('invalid_string');
    for (const name of ['Host', 'content-length', 'Transfer-Encoding', 'connection']) {
      expect(refused(hook({ [name]: 'x' }))).toEqual([{ field: `config.headers.${name}`, code: 'reserved_header' }]);
    }
    const ok = parseNewStep(hook({ 'X-Team': 'growth', Authorization: 'Bearer t0k3n', 'X-Note': 'cr\u00e8me' }));
    expect(ok.config.headers).toEqual({ 'X-Team': 'growth', Authorization: 'Bearer t0k3n', 'X-Note': 'cr\u00e8me' });
  });

  test("UPDATE_CONTACT data: the contacts service's size, depth and key limits are checked when saved", () => {
    const update = (data: Record<string, unknown>) => ({ type: 'UPDATE_CONTACT', config: { data } });
    const tooBig = [{ field: 'config.data', code: 'too_big' }];
    expect(refused(update({ s: 'x'.repeat(64 * 1024) }))).toEqual(tooBig);
    expect(refused(update({ ['k'.repeat(256)]: 1 }))).toEqual(tooBig);
    const nest = (levels: number): unknown => (levels === 0 ? 1 : { a: nest(levels - 1) });
    expect(refused(update({ deep: nest(10) }))).toEqual(tooBig);
    expect(refused(update({ list: [[[[[[[[[[1]]]]]]]]]] }))).toEqual(tooBig);
    const emptyKey = [{ field: 'config.data', code: 'invalid_string' }];
    expect(refused(update({ '': 1 }))).toEqual(emptyKey);
    expect(refused(update({ profile: { '': 'x' } }))).toEqual(emptyKey);
    expect(parseNewStep(update({ deep: nest(9), ['k'.repeat(255)]: 'x'.repeat(1000), gone: null })).config).toEqual({
      data: { deep: nest(9), ['k'.repeat(255)]: 'x'.repeat(1000), gone: null },
    });
  });
});
