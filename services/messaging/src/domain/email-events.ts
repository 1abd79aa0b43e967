import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { busMessage, type OutboxMessage } from '@svc/lib/bus-topic';
import { emailLifecycleSubject, MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import type { EmailRow } from '../store/emails-store.js';

/** This service's name: its database's outbox relay gives each message the id `messaging-<outbox id>`. */
export const MESSAGING_SERVICE = 'messaging';

/** The email lifecycle on the bus (`emails.<type>`); contacts records them as `email.<type>` events. */
/**
 * `received`: inbound mail from the contact (README "Inbound mail"); `suppressed`: queued marketing mail withdrawn
 * because the contact unsubscribed before it went (domain/withdrawals.ts).
 */
export const LIFECYCLE_TYPES = [
  'sent',
  'delivery',
  'open',
  'click',
  'bounce',
  'complaint',
  'received',
  'suppressed',
] as const;
export type LifecycleType = (typeof LIFECYCLE_TYPES)[number];

/** The step's own values; an undefined one is left out, as JSON.stringify would. */
export type LifecycleData = Record<string, JsonValue | undefined>;

/**
 * An `emails.<type>` message. The payload is written as toJson(EmailLifecycle) writes it (email-events.test.ts
 * compares the two): a campaign enqueues one per email, and the generic create + toJson cost more than the rest.
 */
export function lifecycleMessage(
  email: LifecycleEmail,
  type: LifecycleType,
  data: LifecycleData = {},
  occurredAt = new Date(),
): OutboxMessage {
  return { subject: emailLifecycleSubject(type), payload: lifecyclePayload(email, type, data, occurredAt) };
}

type LifecycleEmail = Pick<EmailRow, 'id' | 'project_id' | 'contact_id' | 'to_email' | 'subject' | 'template_id'> &
  Partial<Pick<EmailRow, 'campaign_id' | 'workflow_id' | 'workflow_depth' | 'test'>>;

/** An EmailLifecycle in its proto3 JSON form: an `emails.<type>` payload, or an item of `deliveries.emails_sent`. */
export function lifecyclePayload(
  email: LifecycleEmail,
  type: LifecycleType,
  data: LifecycleData = {},
  occurredAt = new Date(),
): LifecyclePayload {
  // What `defined({ email, subject, templateId?, ...data })` gives (keys in that order, undefined ones left out),
  // without the spread objects and entry arrays: one payload per email sent.
  const about: JsonObject = { email: email.to_email, subject: email.subject };
  if (email.template_id) about.templateId = email.template_id;
  for (const key in data) {
    if (!Object.hasOwn(data, key)) continue;
    const value = data[key];
    if (value !== undefined) about[key] = value;
    else if (Object.hasOwn(about, key)) delete about[key];
  }
  const payload: LifecyclePayload = {
    projectId: email.project_id ?? '',
    contactId: email.contact_id ?? '',
    emailId: email.id ?? '',
    type,
    // A Timestamp in JSON: RFC 3339 in UTC, no fraction when it is zero (Dates carry milliseconds at most).
    occurredAt: occurredAt.toISOString().replace('.000Z', 'Z'),
    data: about,
    // From the row: empty when the email has no campaign or workflow.
    campaignId: email.campaign_id ?? '',
    workflowId: email.workflow_id ?? '',
    test: email.test ?? false,
    workflowDepth: email.workflow_depth ?? 0,
    // Set by inbound mail on the payload it receives back (auto-submitted.ts).
    automatic: false,
  };
  return payload;
}

/** EmailLifecycle as JSON (its proto3 JSON form), as lifecycleMessage writes it. */
export interface LifecyclePayload {
  [field: string]: JsonValue;
  projectId: string;
  contactId: string;
  emailId: string;
  type: string;
  occurredAt: string;
  data: JsonObject;
  campaignId: string;
  workflowId: string;
  test: boolean;
  workflowDepth: number;
  automatic: boolean;
}

/** EmailsSent as JSON (its proto3 JSON form), as emailsSentMessages writes it. */
export interface EmailsSentPayload {
  [field: string]: JsonValue;
  projectId: string;
  emails: LifecyclePayload[];
}

/**
 * The `deliveries.emails_sent` messages of a delivery batch: one per project and EMAILS_PER_MESSAGE emails, each
 * email as its `emails.sent` would carry it (lifecyclePayload), in the order given. They replace `emails.sent`: a
 * campaign's every email is not published, relayed and consumed one message at a time.
 */
export function emailsSentMessages(sent: LifecyclePayload[]): OutboxMessage[] {
  const byProject = new Map<string, LifecyclePayload[]>();
  for (const payload of sent) {
    const of = byProject.get(payload.projectId);
    if (of) of.push(payload);
    else byProject.set(payload.projectId, [payload]);
  }
  const messages: OutboxMessage[] = [];
  for (const [projectId, emails] of byProject)
    for (let i = 0; i < emails.length; i += EMAILS_PER_MESSAGE) {
      const payload: EmailsSentPayload = { projectId, emails: emails.slice(i, i + EMAILS_PER_MESSAGE) };
      messages.push({ subject: MESSAGING_TOPICS.emailsSent.subject, payload });
    }
  return messages;
}

/**
 * Emails per `deliveries.emails_sent` at most (a delivery batch's size by default): a bus message stays far below
 * NATS's 1 MB payload limit even with 998-character subjects (about 3.5 KB an email).
 */
export const EMAILS_PER_MESSAGE = 100;

/**
 * The `deliveries.campaign_sent` messages of a delivery batch's sent emails: one per campaign, with its contacts (test
 * mail and mail of no campaign or contact have none). Each email is also in a `deliveries.emails_sent`; the campaigns
 * service counts from these, so a campaign's every email is not delivered to it one message at a time.
 */
export function campaignSentMessages(
  emails: Array<Pick<EmailRow, 'project_id' | 'contact_id'> & Partial<Pick<EmailRow, 'campaign_id' | 'test'>>>,
  occurredAt = new Date(),
): OutboxMessage[] {
  const byCampaign = new Map<string, { projectId: string; contactIds: string[] }>();
  for (const e of emails) {
    if (!e.campaign_id || !e.contact_id || e.test) continue;
    const of = byCampaign.get(e.campaign_id) ?? { projectId: e.project_id, contactIds: [] };
    of.contactIds.push(e.contact_id);
    byCampaign.set(e.campaign_id, of);
  }
  return [...byCampaign].map(([campaignId, { projectId, contactIds }]) =>
    busMessage(MESSAGING_TOPICS.campaignEmailsSent, {
      projectId,
      campaignId,
      contactIds,
      occurredAt: timestampFromDate(occurredAt),
    }),
  );
}
