import { type AppError, validationError, type FieldError } from '@svc/lib/errors';
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { CountRequestSchema, ListContactsRequestSchema } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { QueueEmailsRequestSchema, SendSource } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { sendError, sendRequest, templateFields, webhookError, webhookRequest } from '../routes/messaging-json.js';
import { messageFromJson, renameErrorFields } from './json-message.js';

function errorsOf(map: () => unknown): FieldError[] {
  try {
    map();
  } catch (err) {
    expect(err).toMatchObject({ status: 422, code: 'VALIDATION_ERROR' });
    return (err as AppError).errors ?? [];
  }
  throw new Error('expected a 422');
}

const send = (body: unknown) => sendRequest(body, { projectId: 'p' });

describe('JSON body -> request message', () => {
  test('every JSON type mistake is a 422 field error, all of them at once', () => {
    const errors = errorsOf(() => send({ to: 5, subject: 1, subscribed: 'yes', data: [1], headers: { 'X-N': 1 } }));
    expect(errors.map((e) => e.field).sort()).toEqual(['data', 'headers.X-N', 'subject', 'subscribed', 'to']);
    expect(errors.find((e) => e.field === 'subscribed')).toEqual({
      field: 'subscribed',
      code: 'invalid_type',
      message: 'Expected boolean, received string',
      received: 'string',
    });
    expect(errors.find((e) => e.field === 'data')?.message).toBe('Expected object, received array');
  });

  test('null is a type mistake unless the route says what it means', () => {
    expect(errorsOf(() => send({ to: 'a@b.co', subject: null })).map((e) => e.field)).toEqual(['subject']);
    expect(templateFields({ replyTo: null, description: null, name: 'x' }, 'update')).toMatchObject({
      replyTo: '',
      description: '',
      name: 'x',
    });
    expect(templateFields({ from: null }, 'create').from).toBeUndefined();
    expect(errorsOf(() => templateFields({ from: null }, 'update')).map((e) => e.field)).toEqual(['from']);
  });

  test('an address is a string or {name, email}; /v1/send takes one recipient or a list', () => {
    const one = send({ to: 'Ann <ann@example.com>' });
    expect(one.to.map((a) => a.form)).toEqual([{ case: 'text', value: 'Ann <ann@example.com>' }]);
    const list = send({
      to: ['a@example.com', { name: null, email: 'b@example.com' }],
      from: { name: 'Shop', email: 's@x.co' },
    });
    expect(list.to[1].form).toMatchObject({ case: 'mailbox', value: { email: 'b@example.com' } });
    expect(list.to[1].form.value).not.toHaveProperty('name', expect.anything());
    expect(list.from?.form).toMatchObject({ case: 'mailbox', value: { name: 'Shop', email: 's@x.co' } });
    // Mistakes are named as the client wrote the body.
    expect(errorsOf(() => send({ to: { email: 5 } })).map((e) => e.field)).toEqual(['to.email']);
    expect(errorsOf(() => send({ to: ['a@b.co', 7] })).map((e) => e.field)).toEqual(['to.1']);
    expect(errorsOf(() => send({ to: null })).map((e) => e.field)).toEqual(['to']);
  });

  test("the service's field names follow the body's form: to.0 is `to` when one recipient was sent", () => {
    const fromService = validationError([{ field: 'to.0.email', code: 'invalid_string', message: 'Invalid email' }]);
    expect((sendError({ to: { email: 'x' } }, fromService) as AppError).errors?.[0].field).toBe('to.email');
    expect((sendError({ to: [{ email: 'x' }] }, fromService) as AppError).errors?.[0].field).toBe('to.0.email');
    const webhook = validationError([{ field: 'events.0.type', code: 'invalid_enum_value', message: 'x' }]);
    expect((webhookError({ type: 'x' }, webhook) as AppError).errors?.[0].field).toBe('type');
    expect((webhookError({ events: [{ type: 'x' }] }, webhook) as AppError).errors?.[0].field).toBe('events.0.type');
    expect(renameErrorFields(new Error('other'), 'a', 'b')).toBeInstanceOf(Error);
  });

  test('bytes are base64 (line-wrapped too), decoded once here', () => {
    const content = Buffer.from('hello attachment').toString('base64');
    const wrapped = `${content.slice(0, 8)}\r\n${content.slice(8)}`;
    const req = send({
      to: 'a@b.co',
      attachments: [{ filename: 'a.txt', content: wrapped, contentType: 'text/plain' }],
    });
    expect(Buffer.from(req.attachments[0].content).toString()).toBe('hello attachment');
    const bad = errorsOf(() =>
      send({ attachments: [{ filename: 'a.txt', content: '***', contentType: 'text/plain' }] }),
    );
    expect(bad).toEqual([expect.objectContaining({ field: 'attachments.0.content', code: 'invalid_base64' })]);
    expect(errorsOf(() => send({ attachments: { filename: 'a' } })).map((e) => e.field)).toEqual(['attachments']);
  });

  test('numbers, integers and enums by name', () => {
    expect(messageFromJson(ListContactsRequestSchema, { limit: 20, subscribed: false }).limit).toBe(20);
    const ints = errorsOf(() => messageFromJson(ListContactsRequestSchema, { limit: 1.5 }));
    expect(ints).toEqual([expect.objectContaining({ field: 'limit', message: 'Expected integer, received number' })]);
    expect(messageFromJson(QueueEmailsRequestSchema, { source: 'SEND_SOURCE_CAMPAIGN' }).source).toBe(
      SendSource.CAMPAIGN,
    );
    const enums = errorsOf(() => messageFromJson(QueueEmailsRequestSchema, { source: 'LOUD' }));
    expect(enums).toEqual([expect.objectContaining({ field: 'source', code: 'invalid_enum_value' })]);
  });

  test('unknown keys are ignored, a body that is not an object reads as {}, route values win over the body', () => {
    expect(send({ to: 'a@b.co', cc: 'x', projectId: 'forged' }).projectId).toBe('p');
    expect(send([1, 2]).to).toEqual([]);
    const hook = webhookRequest({ type: 'bounce', emailId: 'e' }, 'generic');
    expect(hook).toMatchObject({ provider: 'generic', events: [{ type: 'bounce', emailId: 'e' }] });
    expect(webhookRequest({ events: [{ type: 'delivery' }] }, 'x').events).toHaveLength(1);
    expect(errorsOf(() => webhookRequest({ events: 'x' }, 'x')).map((e) => e.field)).toEqual(['events']);
  });

  test('a google.protobuf.Value field carries the JSON as a Value message, nested objects included', () => {
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 1 }] }] };
    const req = messageFromJson(CountRequestSchema, { condition }, {}, { projectId: 'p' });
    expect(req.condition?.kind.case).toBe('structValue');
    expect(toJson(ValueSchema, req.condition!)).toEqual(condition);
  });

  test('a map key named __proto__ stays a key', () => {
    const req = send({ headers: JSON.parse('{"__proto__": "v"}') });
    expect(Object.keys(req.headers)).toEqual(['__proto__']);
  });
});
