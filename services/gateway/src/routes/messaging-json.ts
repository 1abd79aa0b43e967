import {
  HandleProviderWebhookRequestSchema,
  MailboxSchema,
  ProviderNotificationSchema,
  SendEmailRequestSchema,
  TemplateFieldsSchema,
  VerifyEmailRequestSchema,
  type Activity,
  type Domain,
  type EmailVerification,
  type HandleProviderWebhookRequest,
  type SendEmailRequest,
  type Template,
  type TemplateFields,
  type VerifyEmailRequest,
} from '@svc/proto/svc/messaging/v1/messaging_pb';
import { isJsonObject, messageFromJson, renameErrorFields, type ShapeReader } from '../http/json-message.js';
import { iso } from './identity-json.js';

// Request bodies -> messages. REST shapes that are not protobuf JSON: an address is a string or
// {name, email}; /v1/send takes one recipient or a list; a webhook one notification or {events}.

const address: ShapeReader = (value, path, reader) => {
  if (typeof value === 'string') return { form: { case: 'text', value } };
  if (!isJsonObject(value)) return reader.fail(path, 'Expected an email address string or {name, email}', value);
  // A null name is no name.
  const { name, ...rest } = value;
  const mailbox = reader.message(MailboxSchema, name === null ? rest : value, path);
  return { form: { case: 'mailbox', value: mailbox } };
};
const shapes = { 'svc.messaging.v1.Address': address };

/** POST /v1/send. */
export function sendRequest(body: unknown, base: Partial<SendEmailRequest>): SendEmailRequest {
  return messageFromJson(SendEmailRequestSchema, body, { shapes, singleOrList: ['to'] }, base);
}

/** The service names recipients `to.<i>`; a body with one recipient (not a list) hears of `to`. */
export function sendError(body: unknown, err: unknown): unknown {
  const single = !isJsonObject(body) || !Array.isArray(body.to);
  return single ? renameErrorFields(err, 'to.0', 'to') : err;
}

/** POST /templates (`from: null` is a missing sender) and PATCH (null clears the optional texts). */
export function templateFields(body: unknown, op: 'create' | 'update'): TemplateFields {
  const clear = { description: 'empty', fromName: 'empty', replyTo: 'empty' } as const;
  const nulls = op === 'create' ? { ...clear, from: 'absent' as const } : clear;
  return messageFromJson(TemplateFieldsSchema, body, { shapes, nulls });
}

export const verifyRequest = (body: unknown, projectId: string): VerifyEmailRequest =>
  messageFromJson(VerifyEmailRequestSchema, body, {}, { projectId });

/** POST /webhooks/{provider}: `{events: [...]}` or one notification. */
export function webhookRequest(body: unknown, provider: string): HandleProviderWebhookRequest {
  if (isJsonObject(body) && Object.hasOwn(body, 'events')) {
    return messageFromJson(HandleProviderWebhookRequestSchema, body, {}, { provider });
  }
  const one = messageFromJson(ProviderNotificationSchema, body);
  return messageFromJson(HandleProviderWebhookRequestSchema, {}, {}, { provider, events: [one] });
}

/** The service names notifications `events.<i>`; a body of one notification hears of its own fields. */
export function webhookError(body: unknown, err: unknown): unknown {
  return isJsonObject(body) && Object.hasOwn(body, 'events') ? err : renameErrorFields(err, 'events.0', '');
}

export const domainJson = (d: Domain) => ({
  id: d.id,
  domain: d.domain,
  projectId: d.projectId,
  status: d.status,
  verified: d.status === 'verified',
  records: d.records.map((r) => ({
    type: r.type,
    name: r.name,
    value: r.value,
    purpose: r.purpose,
    verified: r.verified,
  })),
  dkimSelector: d.dkimSelector,
  createdAt: iso(d.createdAt),
  verifiedAt: iso(d.verifiedAt),
  lastCheckedAt: iso(d.lastCheckedAt),
});

export const templateJson = (t: Template) => ({
  id: t.id,
  name: t.name,
  description: t.description,
  subject: t.subject,
  body: t.body,
  from: t.fromEmail,
  fromName: t.fromName || null,
  replyTo: t.replyTo || null,
  type: t.type,
  projectId: t.projectId,
  createdAt: iso(t.createdAt),
  updatedAt: iso(t.updatedAt),
});

export const activityJson = (a: Activity) => ({
  id: a.id,
  type: a.type,
  contactId: a.contactId || null,
  emailId: a.emailId || null,
  email: a.email || null,
  name: a.name || null,
  data: a.data ?? {},
  occurredAt: iso(a.occurredAt),
});

export const verificationJson = (v: EmailVerification) => ({
  email: v.email,
  valid: v.valid,
  isDisposable: v.isDisposable,
  isAlias: v.isAlias,
  isTypo: v.isTypo,
  isPlusAddressed: v.isPlusAddressed,
  isPersonalEmail: v.isPersonalEmail,
  domainExists: v.domainExists,
  hasWebsite: v.hasWebsite,
  hasMxRecords: v.hasMxRecords,
  reasons: v.reasons,
  ...(v.suggestion ? { suggestion: v.suggestion } : {}),
});
