import { z } from 'zod';
import { jsonObject } from '@svc/lib/json-object';
import { parseOrThrow } from '@svc/lib/zod-errors';
import { conditionSchema } from './condition.js';
import { liquidProblem } from './liquid.js';

// Request bodies of the workflow API (names from DESIGN.md "Workflow bodies"), validated once
// here: the gateway passes the JSON through.

export const STEP_TYPES = [
  'TRIGGER',
  'SEND_EMAIL',
  'DELAY',
  'WAIT_FOR_EVENT',
  'CONDITION',
  'WEBHOOK',
  'UPDATE_CONTACT',
  'EXIT',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

const MAX_NAME = 200;
const MAX_DESCRIPTION = 1000;
const eventName = z.string().trim().min(1).max(255);
const name = z.string().trim().min(1).max(MAX_NAME);

const UNIT_SECONDS = { seconds: 1, minutes: 60, hours: 3600, days: 86400 } as const;
const MAX_WAIT_SECONDS = 366 * 86400;
const duration = z
  .object({ amount: z.number().int().positive(), unit: z.enum(['seconds', 'minutes', 'hours', 'days']) })
  .strict()
  .refine((d) => d.amount * UNIT_SECONDS[d.unit] <= MAX_WAIT_SECONDS, { message: 'At most 366 days' });
export type Duration = z.infer<typeof duration>;
export const durationMs = (d: Duration) => d.amount * UNIT_SECONDS[d.unit] * 1000;

/** Text that goes into a mail header (subject, sender name) is one line, as on /v1/send. */
const oneLine = [
  (s: string) => !/[\r\n]/.test(s),
  { message: 'Must not contain line breaks', params: { code: 'invalid_string' } },
] as const;

const mailbox = z.union([
  z.string().email(),
  z
    .object({
      name: z
        .string()
        .max(200)
        .refine(...oneLine)
        .optional(),
      email: z.string().email(),
    })
    .strict(),
]);

const sendEmail = z
  .object({
    templateId: z.string().uuid().optional(),
    subject: z
      .string()
      .min(1)
      .max(998)
      .refine(...oneLine)
      .optional(),
    body: z.string().min(1).max(1_000_000).optional(),
    from: mailbox.optional(),
    fromName: z
      .string()
      .max(200)
      .refine(...oneLine)
      .optional(),
    replyTo: z.string().email().optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.templateId) return;
    for (const key of ['subject', 'body', 'from'] as const) {
      if (c[key] === undefined)
        ctx.addIssue({ code: 'custom', path: [key], message: `${key} is required without templateId` });
    }
  });

// RFC 9110 field names are tokens; values are what Node's HTTP client sends (no CR, LF or other controls).
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Headers that address or frame the request (the HTTP client sets them): a step cannot set them. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);

const MAX_HEADER_VALUE = 8192;

function checkWebhookHeaders(headers: Record<string, unknown>, ctx: z.RefinementCtx) {
  for (const [name, value] of Object.entries(headers)) {
    const issue = (message: string, code: string) =>
      ctx.addIssue({ code: 'custom', path: [name.slice(0, 100)], message, params: { code } });
    if (!HEADER_NAME.test(name) || name.length > 256) {
      issue("Header names are HTTP tokens: letters, digits and !#$%&'*+-.^_`|~", 'invalid_header_name');
    } else if (RESERVED_HEADERS.has(name.toLowerCase())) {
      issue(`The ${name} header is set by the HTTP client and cannot be overridden`, 'reserved_header');
    }
    if (typeof value !== 'string') {
      issue('Header values must be strings', 'invalid_type');
    } else if (value.length > MAX_HEADER_VALUE) {
      issue(`Header values must be at most ${MAX_HEADER_VALUE} characters`, 'too_big');
    } else if (!HEADER_VALUE.test(value)) {
      issue('Header values must not contain line breaks or other control characters', 'invalid_string');
    }
  }
}

/** Every string of a WEBHOOK body that holds Liquid parses (a 422 naming its path, not a failed step later). */
function checkLiquid(value: unknown, ctx: z.RefinementCtx, path: (string | number)[] = []): void {
  if (typeof value === 'string') {
    const problem = liquidProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', path, message: problem, params: { code: 'invalid_template' } });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => checkLiquid(v, ctx, [...path, i]));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) checkLiquid(v, ctx, [...path, k]);
  }
}

const webhook = z
  .object({
    url: z
      .string()
      .url()
      .max(2048)
      .refine((u) => /^https?:\/\//i.test(u), { message: 'Only http and https URLs' }),
    method: z.enum(['POST', 'PUT', 'PATCH']).default('POST'),
    // jsonObject, not z.record: a header named `__proto__` is checked and sent like any other, never dropped unseen.
    headers: jsonObject().default({}).superRefine(checkWebhookHeaders) as z.ZodType<Record<string, string>>,
    body: z.unknown().optional().superRefine(checkLiquid),
  })
  .strict();

// The contacts service's limits of a `data` patch (custom-data.ts): its 422 would fail the step on every run.
const MAX_DATA_BYTES = 64 * 1024;
const MAX_DATA_DEPTH = 10;
const MAX_DATA_KEY = 255;

type DataProblem = { message: string; code: 'too_big' | 'invalid_string' };

/** Why a data patch breaks the contacts service's depth or key rules (arrays count as a level), or undefined. */
function dataProblem(node: unknown, depth = 1): DataProblem | undefined {
  if (!node || typeof node !== 'object') return undefined;
  if (depth > MAX_DATA_DEPTH) {
    return { message: `data must not nest deeper than ${MAX_DATA_DEPTH} levels`, code: 'too_big' };
  }
  for (const [key, value] of Object.entries(node)) {
    if (!Array.isArray(node) && key === '') return { message: 'data keys must not be empty', code: 'invalid_string' };
    if (!Array.isArray(node) && key.length > MAX_DATA_KEY) {
      const message = `data keys must be at most ${MAX_DATA_KEY} characters (key starting "${key.slice(0, 32)}")`;
      return { message, code: 'too_big' };
    }
    const problem = dataProblem(value, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

function checkDataLimits(data: Record<string, unknown>, ctx: z.RefinementCtx) {
  const bytes = Buffer.byteLength(JSON.stringify(data));
  const problem: DataProblem | undefined =
    bytes > MAX_DATA_BYTES
      ? { message: `data must be at most ${MAX_DATA_BYTES} bytes when serialized (got ${bytes})`, code: 'too_big' }
      : dataProblem(data);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, params: { code: problem.code } });
}

const updateContact = z
  .object({
    // jsonObject, not z.record: a `__proto__` key is patched into the contact as an ordinary key, as contacts do.
    data: jsonObject().superRefine(checkDataLimits).optional(),
    subscribed: z.boolean().optional(),
  })
  .strict()
  .refine((c) => c.data !== undefined || c.subscribed !== undefined, { message: 'Set data or subscribed' });

export const STEP_CONFIGS = {
  SEND_EMAIL: sendEmail,
  DELAY: duration,
  WAIT_FOR_EVENT: z.object({ eventName, timeout: duration }).strict(),
  CONDITION: z.object({ condition: conditionSchema }).strict(),
  WEBHOOK: webhook,
  UPDATE_CONTACT: updateContact,
  EXIT: z.object({}).strict(),
} as const;
export type CreatableStepType = keyof typeof STEP_CONFIGS;

export type SendEmailConfig = z.infer<typeof sendEmail>;
export type WebhookConfig = z.infer<typeof webhook>;
export type UpdateContactConfig = z.infer<typeof updateContact>;
export type WaitConfig = z.infer<(typeof STEP_CONFIGS)['WAIT_FOR_EVENT']>;
export type ConditionConfig = z.infer<(typeof STEP_CONFIGS)['CONDITION']>;

const creatable = Object.keys(STEP_CONFIGS) as [CreatableStepType, ...CreatableStepType[]];

/** A step's config, checked against its type (422 with paths under `config`). */
export function parseStepConfig(type: CreatableStepType, config: unknown): Record<string, unknown> {
  const out = parseOrThrow(z.object({ config: STEP_CONFIGS[type] }), { config: config ?? {} });
  return out.config as Record<string, unknown>;
}

export function parseNewStep(body: unknown) {
  const b = parseOrThrow(
    z.object({ type: z.enum(creatable), name: name.optional(), config: z.unknown().optional() }).strict(),
    body,
  );
  return { type: b.type, name: b.name, config: parseStepConfig(b.type, b.config) };
}

export function parseStepPatch(body: unknown) {
  return parseOrThrow(z.object({ name: name.optional(), config: z.unknown().optional() }).strict(), body);
}

export function parseNewWorkflow(body: unknown) {
  return parseOrThrow(
    z
      .object({
        name,
        description: z.string().max(MAX_DESCRIPTION).nullable().optional(),
        eventName,
        allowReentry: z.boolean().default(false),
      })
      .strict(),
    body,
  );
}

export function parseWorkflowPatch(body: unknown) {
  return parseOrThrow(
    z
      .object({
        name: name.optional(),
        description: z.string().max(MAX_DESCRIPTION).nullable().optional(),
        triggerType: z.enum(['EVENT', 'MANUAL']).optional(),
        triggerConfig: z.object({ eventName: eventName.optional() }).strict().optional(),
        eventName: eventName.optional(),
        enabled: z.boolean().optional(),
        allowReentry: z.boolean().optional(),
      })
      .strict(),
    body,
  );
}

const branch = z.enum(['yes', 'no']);
export function parseNewTransition(body: unknown) {
  const b = parseOrThrow(
    z
      .object({
        fromStepId: z.string().uuid(),
        toStepId: z.string().uuid(),
        branch: branch.optional(),
        condition: z.object({ branch }).strict().optional(),
        waitOutcome: z.enum(['EVENT', 'TIMEOUT']).optional(),
      })
      .strict(),
    body,
  );
  return {
    fromStepId: b.fromStepId,
    toStepId: b.toStepId,
    branch: b.branch ?? b.condition?.branch ?? null,
    waitOutcome: b.waitOutcome ?? null,
  };
}

export function parseStart(body: unknown) {
  return parseOrThrow(
    z
      .object({
        contactId: z.string().uuid().optional(),
        email: z.string().email().optional(),
        context: jsonObject().default({}),
      })
      .strict()
      .refine((b) => !!b.contactId !== !!b.email, { message: 'Send contactId or email', path: ['contactId'] }),
    body,
  );
}

export const EXECUTION_STATUSES = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const;
