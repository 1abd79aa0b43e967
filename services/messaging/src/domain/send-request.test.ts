import { AppError, type FieldError } from '@svc/lib/errors';
import { MAX_ATTACHMENT_BYTES, parseSendRequest, type SendInput } from './send-request.js';

// The SendEmail message's rules. JSON type mistakes never reach the service: the gateway's
// mapper refuses them (services/gateway/src/http/json-message.test.ts).

const TEMPLATE_ID = '3f1c1b9e-8a2d-4c55-9d7e-2b6f0f1d2a3b';
const base: SendInput = { to: ['ann@example.com'], subject: 'Hi', body: '<p>Hi</p>' };
const bytes = (n: number) => new Uint8Array(n).fill(7);

function errorsOf(input: SendInput, limits?: Parameters<typeof parseSendRequest>[1]): FieldError[] {
  try {
    parseSendRequest(input, limits);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(422);
    expect((err as AppError).code).toBe('VALIDATION_ERROR');
    return (err as AppError).errors ?? [];
  }
  throw new Error('expected a throw');
}
const fields = (input: SendInput, limits?: Parameters<typeof parseSendRequest>[1]) =>
  errorsOf(input, limits).map((e) => e.field);

describe('POST /v1/send body', () => {
  test('a recipient may be a string, "Name <address>" or {name, email}', () => {
    expect(parseSendRequest(base).to).toEqual([{ email: 'ann@example.com' }]);
    expect(parseSendRequest({ ...base, to: [{ name: 'Ann', email: 'ann@example.com' }] }).to).toEqual([
      { name: 'Ann', email: 'ann@example.com' },
    ]);
    expect(parseSendRequest({ ...base, to: ['Bo <bo@example.com>', { email: 'cy@example.com' }] }).to).toEqual([
      { name: 'Bo', email: 'bo@example.com' },
      { email: 'cy@example.com' },
    ]);
  });

  test('to is required, non-empty, and at most 50 recipients', () => {
    expect(errorsOf({ to: [], subject: 'a', body: 'b' })).toEqual([
      expect.objectContaining({ field: 'to', code: 'too_small' }),
    ]);
    const many = Array.from({ length: 51 }, (_, i) => `u${i}@example.com`);
    expect(errorsOf({ ...base, to: many })).toEqual([expect.objectContaining({ field: 'to', code: 'too_big' })]);
    expect(parseSendRequest({ ...base, to: many.slice(0, 50) }).to).toHaveLength(50);
  });

  test('a bad recipient is reported on its own path', () => {
    expect(errorsOf({ ...base, to: ['ok@example.com', { name: 'X', email: 'nope' }] })).toEqual([
      { field: 'to.1.email', code: 'invalid_string', message: 'Invalid email' },
    ]);
    expect(fields({ ...base, to: ['ok@example.com', 'nope'] })).toEqual(['to.1']);
    expect(fields({ ...base, to: [{ email: 'nope' }] })).toEqual(['to.0.email']);
    expect(errorsOf({ ...base, to: [{ name: 'X' }] })).toEqual([
      expect.objectContaining({ field: 'to.0.email', message: 'Required' }),
    ]);
  });

  test('rule 1: content is required, either template or both subject and body', () => {
    expect(errorsOf({ to: ['a@b.com'] })).toEqual([
      expect.objectContaining({ field: 'subject', code: 'required' }),
      expect.objectContaining({ field: 'body', code: 'required' }),
    ]);
    expect(errorsOf({ to: ['a@b.com'], subject: 'Hi' })).toEqual([
      expect.objectContaining({ field: 'body', code: 'required' }),
    ]);
    expect(parseSendRequest({ to: ['a@b.com'], template: TEMPLATE_ID })).toEqual({
      to: [{ email: 'a@b.com' }],
      template: TEMPLATE_ID,
    });
    expect(fields({ to: ['a@b.com'], template: 'not-a-uuid' })).toEqual(['template']);
  });

  test('rule 1 is reported together with other field errors', () => {
    expect(fields({ to: ['nope'], subject: 'Hi' })).toEqual(['to.0', 'body']);
  });

  test('subject is 1 to 998 characters with no newline characters', () => {
    expect(fields({ ...base, subject: '' })).toEqual(['subject']);
    expect(fields({ ...base, subject: 'x'.repeat(999) })).toEqual(['subject']);
    expect(parseSendRequest({ ...base, subject: 'x'.repeat(998) }).subject).toHaveLength(998);
    expect(errorsOf({ ...base, subject: 'Hi\r\nBcc: x@y.com' })).toEqual([
      expect.objectContaining({ field: 'subject', code: 'invalid_string' }),
    ]);
    expect(fields({ ...base, subject: 'Hi\nthere' })).toEqual(['subject']);
  });

  test('body has length at least 1 and at most 512 KiB of UTF-8', () => {
    expect(fields({ ...base, body: '' })).toEqual(['body']);
    expect(parseSendRequest({ ...base, body: 'x'.repeat(512 * 1024) }).body).toHaveLength(512 * 1024);
    const tooBig = [expect.objectContaining({ field: 'body', code: 'too_big' })];
    expect(errorsOf({ ...base, body: 'x'.repeat(512 * 1024 + 1) })).toEqual(tooBig);
    // Counted in bytes: 'é' is two.
    expect(errorsOf({ ...base, body: 'é'.repeat(256 * 1024 + 1) })).toEqual(tooBig);
  });

  test('from may be a string or {name, email}', () => {
    expect(parseSendRequest({ ...base, from: 'Shop <shop@example.com>' }).from).toEqual({
      name: 'Shop',
      email: 'shop@example.com',
    });
    expect(parseSendRequest({ ...base, from: { name: 'Shop', email: 'shop@example.com' } }).from).toEqual({
      name: 'Shop',
      email: 'shop@example.com',
    });
    expect(fields({ ...base, from: { email: 'bad' } })).toEqual(['from.email']);
  });

  test('deprecated name is the fallback only when from is a string without a name', () => {
    expect(parseSendRequest({ ...base, from: 'shop@example.com', name: 'Shop' }).from).toEqual({
      name: 'Shop',
      email: 'shop@example.com',
    });
    expect(parseSendRequest({ ...base, from: 'Real <shop@example.com>', name: 'Shop' }).from).toEqual({
      name: 'Real',
      email: 'shop@example.com',
    });
    expect(parseSendRequest({ ...base, from: { email: 'shop@example.com' }, name: 'Shop' }).from).toEqual({
      email: 'shop@example.com',
    });
    const noFrom = parseSendRequest({ ...base, name: 'Shop' });
    expect(noFrom.from).toBeUndefined();
    expect(noFrom).not.toHaveProperty('name');
    expect(fields({ ...base, from: 'shop@example.com', name: 'A\r\nB' })).toEqual(['name']);
  });

  test('subscribed and data pass through', () => {
    expect(parseSendRequest({ ...base, subscribed: true, data: { plan: 'pro', n: null } })).toMatchObject({
      subscribed: true,
      data: { plan: 'pro', n: null },
    });
  });

  test('a __proto__ key of data or headers is an ordinary key, as in contacts (zod records drop it)', () => {
    const data = JSON.parse('{"__proto__": {"a": 1}, "constructor": "c", "k": 2}');
    const headers = JSON.parse('{"__proto__": "v", "X-A": "w"}');
    const req = parseSendRequest({ ...base, data, headers });
    expect(JSON.stringify(req.data)).toBe('{"__proto__":{"a":1},"constructor":"c","k":2}');
    expect(Object.keys(req.headers!)).toEqual(['__proto__', 'X-A']);
    expect(Object.getPrototypeOf(req.data)).toBe(Object.prototype);
    expect(errorsOf({ ...base, data: [] as never })).toEqual([
      expect.objectContaining({ field: 'data', code: 'invalid_type' }),
    ]);
  });

  test('reply is an email', () => {
    expect(parseSendRequest({ ...base, reply: 'help@example.com' }).reply).toBe('help@example.com');
    expect(errorsOf({ ...base, reply: 'nope' })).toEqual([
      expect.objectContaining({ field: 'reply', code: 'invalid_string' }),
    ]);
  });

  test('custom headers pass through', () => {
    expect(parseSendRequest({ ...base, headers: { 'X-Campaign': 'spring', 'X-Entity-Ref-ID': '42' } }).headers).toEqual(
      { 'X-Campaign': 'spring', 'X-Entity-Ref-ID': '42' },
    );
  });

  test('header names must not contain CR, LF, colon or spaces', () => {
    expect(
      errorsOf({ ...base, headers: { 'X-A\r\nBcc': 'v', 'X:B': 'v', 'X C': 'v', '': 'v' } }).map((e) => [
        e.field,
        e.code,
      ]),
    ).toEqual([
      ['headers.X-A\r\nBcc', 'invalid_header_name'],
      ['headers.X:B', 'invalid_header_name'],
      ['headers.X C', 'invalid_header_name'],
      ['headers.', 'invalid_header_name'],
    ]);
  });

  test('header values are at most 998 characters and contain no CR or LF', () => {
    expect(parseSendRequest({ ...base, headers: { 'X-Long': 'v'.repeat(998) } }).headers!['X-Long']).toHaveLength(998);
    expect(errorsOf({ ...base, headers: { 'X-Foo': 'v'.repeat(999) } })).toEqual([
      expect.objectContaining({ field: 'headers.X-Foo', code: 'too_big' }),
    ]);
    expect(errorsOf({ ...base, headers: { 'X-Foo': 'a\r\nBcc: x@y.com' } })).toEqual([
      expect.objectContaining({ field: 'headers.X-Foo', code: 'invalid_string' }),
    ]);
  });

  test('reserved headers cannot be set, whatever their case', () => {
    const composed = ['From', 'to', 'SUBJECT', 'Reply-To', 'message-id', 'Content-Type', 'MIME-Version'];
    const platform = ['DKIM-Signature', 'List-Unsubscribe', 'Bcc', 'X-Email-Id', 'x-email-id'];
    const bulk = ['Precedence', 'Auto-Submitted'];
    const prefixed = ['Content-Disposition', 'Resent-From', 'ARC-Seal', 'arc-message-signature'];
    const trace = ['Received', 'Authentication-Results', 'Received-SPF', 'Delivered-To', 'Return-Path'];
    for (const name of [...composed, ...platform, ...bulk, ...prefixed, ...trace]) {
      const [error] = errorsOf({ ...base, headers: { [name]: 'x' } });
      expect(error).toEqual({
        field: `headers.${name}`,
        code: 'reserved_header',
        message: expect.stringContaining('set by the service'),
      });
    }
  });

  test("other headers stay the caller's", () => {
    const headers = { 'X-Mailer': 'app 1.0', 'In-Reply-To': '<a@b.c>', References: '<a@b.c>', 'List-Id': '<n.x>' };
    expect(parseSendRequest({ ...base, headers }).headers).toEqual(headers);
  });

  test('header names are at most 100 characters; a long name is shortened in the error', () => {
    expect(parseSendRequest({ ...base, headers: { ['X'.repeat(100)]: 'v' } }).headers).toBeDefined();
    expect(errorsOf({ ...base, headers: { ['X'.repeat(100_000)]: 'v' } })).toEqual([
      expect.objectContaining({ field: `headers.${'X'.repeat(100)}...`, code: 'too_big' }),
    ]);
  });

  test('at most 100 headers', () => {
    const headers = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`X-H${i}`, 'v']));
    expect(errorsOf({ ...base, headers })).toEqual([expect.objectContaining({ field: 'headers', code: 'too_big' })]);
  });

  test('attachments take the DESIGN.md shape; disposition defaults to attachment', () => {
    const content = new TextEncoder().encode('hello');
    const request = parseSendRequest({
      ...base,
      attachments: [{ filename: 'a.pdf', content, contentType: 'application/pdf' }],
    });
    expect(request.attachments).toEqual([
      { filename: 'a.pdf', content, contentType: 'application/pdf', disposition: 'attachment' },
    ]);
    const inline = parseSendRequest({
      ...base,
      attachments: [
        { filename: 'logo.png', content: bytes(3), contentType: 'image/png', contentId: 'logo', disposition: 'inline' },
      ],
    });
    expect(inline.attachments![0]).toMatchObject({ contentId: 'logo', disposition: 'inline' });
  });

  test('at most 10 attachments', () => {
    const item = { filename: 'a.txt', content: bytes(1), contentType: 'text/plain' };
    expect(parseSendRequest({ ...base, attachments: Array(10).fill(item) }).attachments).toHaveLength(10);
    expect(fields({ ...base, attachments: Array(11).fill(item) })).toEqual(['attachments']);
  });

  test('attachment filename has no line breaks or path separators; contentType is type/subtype', () => {
    const att = (over: object) => ({
      ...base,
      attachments: [{ filename: 'a.txt', content: bytes(1), contentType: 'text/plain', ...over }],
    });
    expect(fields(att({ filename: '../etc/passwd' }))).toEqual(['attachments.0.filename']);
    expect(fields(att({ filename: 'a\\b.txt' }))).toEqual(['attachments.0.filename']);
    expect(fields(att({ filename: 'a\r\n.txt' }))).toEqual(['attachments.0.filename']);
    expect(fields(att({ contentType: 'pdf' }))).toEqual(['attachments.0.contentType']);
    expect(fields(att({ contentType: 'text/plain\r\nX: y' }))).toEqual(['attachments.0.contentType']);
    expect(fields(att({ disposition: 'sideways' }))).toEqual(['attachments.0.disposition']);
  });

  test('inline attachments need a contentId', () => {
    expect(
      errorsOf({
        ...base,
        attachments: [{ filename: 'l.png', content: bytes(3), contentType: 'image/png', disposition: 'inline' }],
      }),
    ).toEqual([expect.objectContaining({ field: 'attachments.0.contentId', code: 'required' })]);
  });

  test('a contentId is printable ASCII without spaces or angle brackets (it is the Content-ID header)', () => {
    const inline = (contentId: string): SendInput => ({
      ...base,
      attachments: [
        { filename: 'l.png', content: bytes(3), contentType: 'image/png', contentId, disposition: 'inline' },
      ],
    });
    expect(parseSendRequest(inline('logo.1@example.com')).attachments![0].contentId).toBe('logo.1@example.com');
    for (const bad of ['lögo', 'logo\u00a0x', 'a b', '<logo>', 'logo\x7f'])
      expect(fields(inline(bad))).toEqual(['attachments.0.contentId']);
  });

  test('attachments total at most 10 MB decoded by default, configurable', () => {
    expect(MAX_ATTACHMENT_BYTES).toBe(10 * 1024 * 1024);
    const att = (n: number) => ({ filename: 'a.bin', content: bytes(n), contentType: 'application/octet-stream' });
    expect(
      parseSendRequest({ ...base, attachments: [att(MAX_ATTACHMENT_BYTES / 2), att(MAX_ATTACHMENT_BYTES / 2)] })
        .attachments,
    ).toHaveLength(2);
    expect(
      errorsOf({ ...base, attachments: [att(MAX_ATTACHMENT_BYTES / 2), att(MAX_ATTACHMENT_BYTES / 2 + 1)] }),
    ).toEqual([expect.objectContaining({ field: 'attachments', code: 'too_big' })]);
    expect(fields({ ...base, attachments: [att(101)] }, { maxAttachmentBytes: 100 })).toEqual(['attachments']);
    expect(
      parseSendRequest({ ...base, attachments: [att(100)] }, { maxAttachmentBytes: 100 }).attachments,
    ).toHaveLength(1);
  });

  test('fields left unset are absent from the request', () => {
    expect(parseSendRequest(base)).toEqual({ to: [{ email: 'ann@example.com' }], subject: 'Hi', body: '<p>Hi</p>' });
  });
});
