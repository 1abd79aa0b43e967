import { z } from 'zod';
import { validationError } from '@svc/lib/errors';
import { isJsonObject, jsonObject } from '@svc/lib/json-object';
import { fieldErrors } from '@svc/lib/zod-errors';
import { addressSchema, isValidEmail } from './address.js';
import { bodySchema } from './content-limits.js';
import type { BatchOrigin, BatchRecipient, ContentSpec } from './email-batch.js';
import type { SendSource } from './priority.js';
import {
  attachmentsSchema,
  contentRequired,
  headersSchema,
  MAX_ATTACHMENT_BYTES,
  subjectSchema,
  type AttachmentInput,
  type SendLimits,
} from './send-request.js';
import { TEMPLATE_TYPES } from './templates.js';

// QueueEmails (campaigns and workflows): the content rules of /v1/send, for recipients the caller
// already resolved to contacts.

/** Recipients of one call: enough for a campaign batch, small enough for one transaction. */
export const MAX_QUEUE_RECIPIENTS = 1000;

/** QueueRecipient.workflow_depth at most (emails.workflow_depth is a smallint; workflows stop chains far sooner). */
const MAX_WORKFLOW_DEPTH = 1000;

/** QueueRecipient.dedupe_key: room for `workflow:<uuid>:<step id>`. */
export const MAX_DEDUPE_KEY = 300;

/** The QueueEmailsRequest message as the service receives it. */
export interface QueueInput {
  content: {
    templateId?: string;
    subject?: string;
    body?: string;
    from?: { name?: string; email?: string };
    replyTo?: string;
    type?: string;
    headers?: Record<string, string>;
    attachments?: AttachmentInput[];
  };
  recipients: BatchRecipient[];
  source: SendSource;
  campaignId?: string;
  workflowId?: string;
  test?: boolean;
}

export interface QueueRequest {
  content: ContentSpec;
  recipients: BatchRecipient[];
  origin: BatchOrigin;
}

const email = z.string().refine(isValidEmail, { message: 'Invalid email', params: { code: 'invalid_string' } });

/** One recipient's rules (exported for the tests that hold `validRecipient` to them). */
export const recipientSchema = z.object({
  contactId: z.string().uuid(),
  email,
  name: z
    .string()
    .max(200)
    .refine((s) => !/[\r\n]/.test(s), { message: 'Name must not contain line breaks' }),
  subscribed: z.boolean(),
  variables: jsonObject(),
  // Empty: none (proto3 default).
  dedupeKey: z
    .string()
    .max(MAX_DEDUPE_KEY)
    .optional()
    .transform((k) => k || undefined),
  // Workflows only; 0 (proto3 default): none.
  workflowDepth: z
    .number()
    .int()
    .min(0)
    .max(MAX_WORKFLOW_DEPTH)
    .optional()
    .transform((d) => d || undefined),
});

const UUID = /^[0-9a-fA-F]{8}\b-[0-9a-fA-F]{4}\b-[0-9a-fA-F]{4}\b-[0-9a-fA-F]{4}\b-[0-9a-fA-F]{12}$/i;
const LINE_BREAK = /[\r\n]/;

/**
 * `recipientSchema`'s output for a recipient it certainly accepts (the same rules, written out: zod costs about
 * 12 us a recipient, most of a campaign batch's validation), or undefined when zod must decide (and name the errors).
 */
export function validRecipient(r: unknown): BatchRecipient | undefined {
  if (!isJsonObject(r)) return undefined;
  const { contactId, email, name, subscribed, variables, dedupeKey, workflowDepth } = r;
  if (typeof contactId !== 'string' || !UUID.test(contactId)) return undefined;
  if (typeof email !== 'string' || !isValidEmail(email)) return undefined;
  if (typeof name !== 'string' || name.length > 200 || LINE_BREAK.test(name)) return undefined;
  if (typeof subscribed !== 'boolean' || !isJsonObject(variables)) return undefined;
  if (dedupeKey !== undefined && (typeof dedupeKey !== 'string' || dedupeKey.length > MAX_DEDUPE_KEY)) return undefined;
  if (
    workflowDepth !== undefined &&
    (typeof workflowDepth !== 'number' ||
      !Number.isInteger(workflowDepth) ||
      workflowDepth < 0 ||
      workflowDepth > MAX_WORKFLOW_DEPTH)
  ) {
    return undefined;
  }
  const out: BatchRecipient = { contactId, email, name, subscribed, variables, dedupeKey: dedupeKey || undefined };
  if (workflowDepth) out.workflowDepth = workflowDepth;
  return out;
}

const queueSchema = (maxAttachmentBytes: number, recipients: z.ZodTypeAny = recipientSchema) =>
  z.object({
    content: z.object({
      templateId: z.string().uuid().optional(),
      subject: subjectSchema.optional(),
      body: bodySchema.optional(),
      from: addressSchema.optional(),
      replyTo: email.optional(),
      type: z.enum(TEMPLATE_TYPES).optional(),
      headers: headersSchema.optional(),
      attachments: attachmentsSchema(maxAttachmentBytes).optional(),
    }),
    recipients: z.array(recipients).min(1).max(MAX_QUEUE_RECIPIENTS),
    source: z.enum(['transactional', 'workflow', 'campaign']),
    campaignId: z.string().uuid().optional(),
    workflowId: z.string().uuid().optional(),
    test: z.boolean().optional(),
  });

/** Validates a QueueEmails request; throws 422 VALIDATION_ERROR listing every problem. */
export function parseQueueRequest(input: QueueInput, limits: SendLimits = {}): QueueRequest {
  const maxAttachmentBytes = limits.maxAttachmentBytes ?? MAX_ATTACHMENT_BYTES;
  // Recipients checked by hand first; if any is not certainly valid, zod checks everything and lists the errors.
  const checked = Array.isArray(input.recipients) ? input.recipients.map(validRecipient) : [];
  const fast = checked.length > 0 && checked.every((r) => r !== undefined);
  const result = (fast ? queueSchema(maxAttachmentBytes, z.unknown()) : queueSchema(maxAttachmentBytes)).safeParse(
    input,
  );
  const { templateId: template, subject, body } = input.content;
  const missing = contentRequired({ template, subject, body }).map((e) => ({ ...e, field: `content.${e.field}` }));
  if (!result.success || missing.length) {
    throw validationError([...(result.success ? [] : fieldErrors(result.error)), ...missing]);
  }
  const { content, source, campaignId, workflowId, test } = result.data;
  const { templateId, ...rest } = content;
  return {
    content: { ...rest, ...(templateId ? { templateId } : {}) },
    recipients: fast ? (checked as BatchRecipient[]) : (result.data.recipients as BatchRecipient[]),
    origin: { source, campaignId, workflowId, test },
  };
}
