import { z } from 'zod';
import { validationError, type FieldError } from '@svc/lib/errors';
import { jsonObject } from '@svc/lib/json-object';
import { fieldErrors } from '@svc/lib/zod-errors';
import { addressSchema, isValidEmail, type Address, type AddressInput } from './address.js';
import { bodySchema, MAX_SUBJECT_CHARS } from './content-limits.js';
import { isReservedHeader } from './message-headers.js';

// Body of POST /v1/send, per SPEC.md; the attachment shape is DESIGN.md's. JSON types are checked
// when the gateway maps the body to the RPC message; the rules are checked here, once.

/** SPEC.md Limits: "10 MB total by default" (binary megabytes, decoded size). */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
const MAX_ATTACHMENTS = 10;
const MAX_RECIPIENTS = 50;
const MAX_HEADERS = 100;
const MAX_HEADER_NAME = 100;
const MAX_LINE = 998; // RFC 5322 line length, SPEC.md's header value limit
const LINE_BREAK = /[\r\n]/;

export interface SendLimits {
  maxAttachmentBytes?: number;
}

export interface Attachment {
  filename: string;
  content: Uint8Array;
  contentType: string;
  contentId?: string;
  disposition: 'attachment' | 'inline';
}

/** An attachment as sent (SendEmail and QueueEmails messages). */
export interface AttachmentInput extends Omit<Attachment, 'disposition'> {
  disposition?: string;
}

/** The SendEmail message's fields, as the service receives them. */
export interface SendInput {
  /** The REST body's single recipient arrives as a list of one. */
  to: AddressInput[];
  subject?: string;
  body?: string;
  template?: string;
  from?: AddressInput;
  name?: string;
  subscribed?: boolean;
  data?: Record<string, unknown>;
  headers?: Record<string, string>;
  reply?: string;
  attachments?: AttachmentInput[];
}

export interface SendRequest {
  to: Address[];
  subject?: string;
  body?: string;
  template?: string;
  /** The deprecated `name` is already folded in here when it applies. */
  from?: Address;
  subscribed?: boolean;
  data?: Record<string, unknown>;
  headers?: Record<string, string>;
  reply?: string;
  attachments?: Attachment[];
}

const noLineBreaks = (what: string) =>
  [
    (s: string) => !LINE_BREAK.test(s),
    { message: `${what} must not contain line breaks`, params: { code: 'invalid_string' } },
  ] as const;

const toSchema = z.array(z.unknown()).transform((value, ctx): Address[] => {
  const one = (item: unknown, path: (string | number)[]): Address | undefined => {
    const result = addressSchema.safeParse(item);
    if (result.success) return result.data;
    for (const issue of result.error.issues) ctx.addIssue({ ...issue, path: [...path, ...issue.path] } as z.IssueData);
    return undefined;
  };
  if (value.length === 0 || value.length > MAX_RECIPIENTS) {
    const message =
      value.length === 0 ? 'At least one recipient is required' : `At most ${MAX_RECIPIENTS} recipients per request`;
    ctx.addIssue({ code: 'custom', message, params: { code: value.length === 0 ? 'too_small' : 'too_big' } });
    return z.NEVER;
  }
  const addresses = value.map((item, i) => one(item, [i]));
  return addresses.every(Boolean) ? (addresses as Address[]) : z.NEVER;
});

// RFC 5322 field-name: printable US-ASCII except colon (so no space, CR or LF either).
const HEADER_NAME = /^[\x21-\x39\x3B-\x7E]+$/;
// jsonObject, not z.record: a header named `__proto__` is checked like any other, never dropped unseen.
export const headersSchema = jsonObject().superRefine((headers, ctx) => {
  const entries = Object.entries(headers);
  if (entries.length > MAX_HEADERS) {
    ctx.addIssue({ code: 'custom', message: `At most ${MAX_HEADERS} headers`, params: { code: 'too_big' } });
  }
  for (const [name, value] of entries) {
    // The field path echoes the name: a huge one is shortened there.
    const field = name.length > MAX_HEADER_NAME ? `${name.slice(0, MAX_HEADER_NAME)}...` : name;
    const issue = (message: string, code: string) =>
      ctx.addIssue({ code: 'custom', path: [field], message, params: { code } });
    if (name.length > MAX_HEADER_NAME) {
      issue(`Header names must be at most ${MAX_HEADER_NAME} characters`, 'too_big');
    } else if (!HEADER_NAME.test(name)) {
      issue('Header names are printable ASCII without spaces, colons or line breaks', 'invalid_header_name');
    } else if (isReservedHeader(name)) {
      issue(`The ${name} header is set by the service and cannot be overridden`, 'reserved_header');
    }
    if (typeof value !== 'string') issue('Header values must be strings', 'invalid_type');
    else if (LINE_BREAK.test(value)) issue('Header values must not contain line breaks', 'invalid_string');
    else if (value.length > MAX_LINE) issue(`Header values must be at most ${MAX_LINE} characters`, 'too_big');
  }
}) as unknown as z.ZodType<Record<string, string>>;

const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
// Control characters would break the Content-Disposition header; separators would let a
// receiving client write outside its download folder.
const UNSAFE_FILENAME = /[\x00-\x1f\x7f/\\]/;

const attachmentSchema = z
  .object({
    filename: z
      .string()
      .min(1)
      .max(255)
      .refine((s) => !UNSAFE_FILENAME.test(s) && s !== '.' && s !== '..', {
        message: 'Filename must not contain line breaks, control characters or path separators',
        params: { code: 'invalid_string' },
      }),
    // Decoded from the JSON body's base64 by the gateway, once.
    content: z.instanceof(Uint8Array),
    contentType: z.string().regex(MIME_TYPE, 'Content type must look like type/subtype'),
    contentId: z
      .string()
      .min(1)
      .max(255)
      // It becomes the Content-ID header (RFC 2045 msg-id): 8-bit there breaks mail without SMTPUTF8.
      .regex(/^[\x21-\x3b\x3d\x3f-\x7e]+$/, 'Content id must be printable ASCII without spaces or angle brackets')
      .optional(),
    disposition: z.enum(['attachment', 'inline']).default('attachment'),
  })
  .superRefine((a, ctx) => {
    // An inline part is only reachable from the HTML through `cid:<contentId>`.
    if (a.disposition === 'inline' && a.contentId === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['contentId'],
        message: 'contentId is required for inline attachments',
        params: { code: 'required' },
      });
    }
  });

export const attachmentsSchema = (maxBytes: number) =>
  z
    .array(attachmentSchema)
    .max(MAX_ATTACHMENTS, `At most ${MAX_ATTACHMENTS} attachments`)
    .superRefine((items, ctx) => {
      const total = items.reduce((sum, a) => sum + a.content.byteLength, 0);
      if (total > maxBytes) {
        ctx.addIssue({
          code: 'custom',
          message: `Attachments total ${total} bytes, more than the ${maxBytes} byte limit`,
          params: { code: 'too_big' },
        });
      }
    });

export const subjectSchema = z
  .string()
  .min(1)
  .max(MAX_SUBJECT_CHARS)
  .refine(...noLineBreaks('Subject'));

const buildSendSchema = (limits: Required<SendLimits>) =>
  z.object({
    to: toSchema,
    subject: subjectSchema.optional(),
    body: bodySchema.optional(),
    template: z.string().uuid().optional(),
    from: addressSchema.optional(),
    name: z
      .string()
      .max(200)
      .refine(...noLineBreaks('Name'))
      .optional(),
    subscribed: z.boolean().optional(),
    // As contacts' data: a `__proto__` key is an ordinary key (stored, merged, readable in Liquid).
    data: jsonObject().optional(),
    headers: headersSchema.optional(),
    reply: z
      .string()
      .refine(isValidEmail, { message: 'Invalid email', params: { code: 'invalid_string' } })
      .optional(),
    attachments: attachmentsSchema(limits.maxAttachmentBytes).optional(),
  });

/** The schema of each attachment limit in use (one, in practice), built once: building it cost more than a parse. */
const sendSchemas = new Map<number, ReturnType<typeof buildSendSchema>>();
function sendSchema(limits: Required<SendLimits>) {
  let schema = sendSchemas.get(limits.maxAttachmentBytes);
  if (!schema) sendSchemas.set(limits.maxAttachmentBytes, (schema = buildSendSchema(limits)));
  return schema;
}

/** Rule 1: "either `template`, or both `subject` and `body`", reported alongside the other errors. */
export function contentRequired(input: { template?: string; subject?: string; body?: string }): FieldError[] {
  if (input.template !== undefined) return [];
  return (['subject', 'body'] as const)
    .filter((field) => input[field] === undefined)
    .map((field) => ({ field, code: 'required', message: `${field} is required when no template is given` }));
}

/** Validates and normalises a /v1/send request; throws 422 VALIDATION_ERROR listing every problem. */
export function parseSendRequest(input: SendInput, limits: SendLimits = {}): SendRequest {
  const result = sendSchema({ maxAttachmentBytes: limits.maxAttachmentBytes ?? MAX_ATTACHMENT_BYTES }).safeParse(input);
  const errors = [...(result.success ? [] : fieldErrors(result.error)), ...contentRequired(input)];
  if (!result.success || errors.length) throw validationError(errors);

  const { name, from, ...rest } = result.data;
  const fromWasString = typeof input.from === 'string';
  // SPEC.md: `name` is "used only as fallback when `from` is a string without a name".
  const fallbackName = name?.trim();
  const sender = from && fromWasString && !from.name && fallbackName ? { name: fallbackName, email: from.email } : from;
  const request: SendRequest = { ...rest, from: sender };
  for (const key of Object.keys(request) as (keyof SendRequest)[]) {
    if (request[key] === undefined) delete request[key];
  }
  return request;
}
