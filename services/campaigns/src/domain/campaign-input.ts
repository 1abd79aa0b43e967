import { z } from 'zod';
import { isValidEmail } from '@svc/lib/email-syntax';
import { validationError, type FieldError } from '@svc/lib/errors';
import { isUuid } from '@svc/lib/ids';
import { fieldErrors } from '@svc/lib/zod-errors';
import type { AudienceType, CampaignContent, CampaignType } from '../store/campaign-row.js';

export const CAMPAIGN_TYPES = ['TRANSACTIONAL', 'MARKETING', 'HEADLESS'] as const;
export const AUDIENCE_TYPES = ['ALL', 'SEGMENT', 'FILTERED'] as const;

/** RFC 5322's line limit (as /v1/send and templates). */
export const MAX_SUBJECT_CHARS = 998;
/** As a template body (Gmail clips messages past about 100 KB). */
export const MAX_BODY_BYTES = 512 * 1024;

/** The CampaignFields message as the service receives it; an empty description, fromName or replyTo clears it. */
export interface CampaignInput {
  name?: string;
  description?: string;
  subject?: string;
  body?: string;
  from?: string;
  fromName?: string;
  replyTo?: string;
  type?: string;
  audienceType?: string;
  segmentId?: string;
  /** The filter tree as sent (any JSON); undefined when absent. */
  audienceCondition?: unknown;
}

const oneLine = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !/[\r\n]/.test(s), { message: 'Must not contain line breaks', params: { code: 'invalid_string' } });
const email = z
  .string()
  .trim()
  .refine(isValidEmail, { message: 'Invalid email', params: { code: 'invalid_string' } });

const fields = {
  name: z.string().trim().min(1).max(200),
  description: z.string().max(2000),
  subject: oneLine(MAX_SUBJECT_CHARS).pipe(z.string().min(1)),
  body: z
    .string()
    .min(1)
    .refine((s) => Buffer.byteLength(s) <= MAX_BODY_BYTES, {
      message: `Body must be at most ${MAX_BODY_BYTES} bytes (512 KiB) of UTF-8`,
      params: { code: 'too_big' },
    }),
  from: email,
  fromName: oneLine(200),
  replyTo: z.union([z.literal(''), email]),
  type: z.enum(CAMPAIGN_TYPES),
  audienceType: z.enum(AUDIENCE_TYPES),
  segmentId: z.string().refine(isUuid, { message: 'Invalid uuid', params: { code: 'invalid_string' } }),
};

const createSchema = z.object({
  ...fields,
  description: fields.description.optional(),
  fromName: fields.fromName.optional(),
  replyTo: fields.replyTo.optional(),
  type: fields.type.default('MARKETING'),
  audienceType: fields.audienceType.default('ALL'),
  segmentId: fields.segmentId.optional(),
});

const replaceSchema = z.object(fields).partial();

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * SPEC.md's audience rule on the resulting campaign: SEGMENT needs segmentId, FILTERED needs an
 * audienceCondition object, and neither is set where its audience type does not use it.
 */
function audienceErrors(type: AudienceType, segmentId: string | null, condition: unknown | null): FieldError[] {
  const errors: FieldError[] = [];
  if (type === 'SEGMENT' && !segmentId)
    errors.push({
      field: 'segmentId',
      message: 'segmentId is required when audienceType is SEGMENT',
      code: 'required',
    });
  if (type !== 'SEGMENT' && segmentId) {
    const message = `segmentId is only for SEGMENT audiences (audienceType is ${type})`;
    errors.push({ field: 'segmentId', message, code: 'unrecognized_keys' });
  }
  if (type === 'FILTERED' && condition === null) {
    const message = 'audienceCondition is required when audienceType is FILTERED';
    errors.push({ field: 'audienceCondition', message, code: 'required' });
  } else if (type === 'FILTERED' && !isObject(condition)) {
    const message = 'audienceCondition must be a filter tree object';
    errors.push({ field: 'audienceCondition', message, code: 'invalid_type' });
  }
  if (type !== 'FILTERED' && condition !== null) {
    const message = `audienceCondition is only for FILTERED audiences (audienceType is ${type})`;
    errors.push({ field: 'audienceCondition', message, code: 'unrecognized_keys' });
  }
  return errors;
}

function parse<S extends z.ZodTypeAny>(schema: S, input: CampaignInput, extra: () => FieldError[]): z.infer<S> {
  const result = schema.safeParse(input);
  const errors = [...(result.success ? [] : fieldErrors(result.error))];
  // Audience errors only when the audience fields themselves parsed (one message per field).
  if (!errors.some((e) => /^(audienceType|segmentId)$/.test(e.field))) errors.push(...extra());
  if (errors.length) throw validationError(errors);
  return result.data;
}

/** POST /campaigns: name, subject, body and from are required; type MARKETING and audience ALL by default. */
export function validateCreate(input: CampaignInput): CampaignContent {
  const condition = input.audienceCondition ?? null;
  const audience = () =>
    audienceErrors((input.audienceType ?? 'ALL') as AudienceType, input.segmentId ?? null, condition);
  const c = parse(createSchema, input, audience);
  return {
    name: c.name,
    description: c.description ?? '',
    subject: c.subject,
    body: c.body,
    from_email: c.from,
    from_name: c.fromName ?? '',
    reply_to: c.replyTo ?? '',
    type: c.type as CampaignType,
    audience_type: c.audienceType as AudienceType,
    segment_id: c.segmentId?.toLowerCase() ?? null,
    audience_condition: condition,
  };
}

/**
 * PUT /campaigns/{id}: the fields sent replace the stored ones, the others are kept. A new
 * audienceType drops the stored segmentId/audienceCondition it does not use; the audience rule
 * then holds for the result.
 */
export function validateReplace(input: CampaignInput, current: CampaignContent): CampaignContent {
  const typeChanged = input.audienceType !== undefined && input.audienceType !== current.audience_type;
  const audienceType = (input.audienceType ?? current.audience_type) as AudienceType;
  const segmentId = input.segmentId ?? (typeChanged ? null : current.segment_id);
  const condition = input.audienceCondition ?? (typeChanged ? null : current.audience_condition);
  const c = parse(replaceSchema, input, () => audienceErrors(audienceType, segmentId, condition));
  return {
    name: c.name ?? current.name,
    description: c.description ?? current.description,
    subject: c.subject ?? current.subject,
    body: c.body ?? current.body,
    from_email: c.from ?? current.from_email,
    from_name: c.fromName ?? current.from_name,
    reply_to: c.replyTo ?? current.reply_to,
    type: (c.type ?? current.type) as CampaignType,
    audience_type: audienceType,
    segment_id: segmentId?.toLowerCase() ?? null,
    audience_condition: condition,
  };
}

/** `POST /campaigns/{id}/test {email}`. */
export function validateTestEmail(address: string): string {
  const r = email.safeParse(address);
  if (!r.success || !address) {
    throw validationError([
      { field: 'email', message: 'A valid email is required', code: 'invalid_string', received: address },
    ]);
  }
  return r.data;
}
