import { z } from 'zod';
import { validationError } from '@svc/lib/errors';
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

const recipientSchema = z.object({
  contactId: z.string().uuid(),
  email,
  name: z
    .string()
    .max(200)
    .refine((s) => !/[\r\n]/.test(s), { message: 'Name must not contain line breaks' }),
  subscribed: z.boolean(),
  variables: z.record(z.string(), z.unknown()),
  // Empty: none (proto3 default).
  dedupeKey: z
    .string()
    .max(MAX_DEDUPE_KEY)
    .optional()
    .transform((k) => k || undefined),
});

const queueSchema = (maxAttachmentBytes: number) =>
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
    recipients: z.array(recipientSchema).min(1).max(MAX_QUEUE_RECIPIENTS),
    source: z.enum(['transactional', 'workflow', 'campaign']),
    campaignId: z.string().uuid().optional(),
    workflowId: z.string().uuid().optional(),
    test: z.boolean().optional(),
  });

/** Validates a QueueEmails request; throws 422 VALIDATION_ERROR listing every problem. */
export function parseQueueRequest(input: QueueInput, limits: SendLimits = {}): QueueRequest {
  const result = queueSchema(limits.maxAttachmentBytes ?? MAX_ATTACHMENT_BYTES).safeParse(input);
  const { templateId: template, subject, body } = input.content;
  const missing = contentRequired({ template, subject, body }).map((e) => ({ ...e, field: `content.${e.field}` }));
  if (!result.success || missing.length) {
    throw validationError([...(result.success ? [] : fieldErrors(result.error)), ...missing]);
  }
  const { content, recipients, source, campaignId, workflowId, test } = result.data;
  const { templateId, ...rest } = content;
  return {
    content: { ...rest, ...(templateId ? { templateId } : {}) },
    recipients,
    origin: { source, campaignId, workflowId, test },
  };
}
