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

function defined(data: LifecycleData): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(data)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * An `emails.<type>` message. The payload is written as toJson(EmailLifecycle) writes it (email-events.test.ts
 * compares the two): a campaign enqueues one per email, and the generic create + toJson cost more than the rest.
 */
export function lifecycleMessage(
  email: Pick<EmailRow, 'id' | 'project_id' | 'contact_id' | 'to_email' | 'subject' | 'template_id'> &
    Partial<Pick<EmailRow, 'campaign_id' | 'workflow_id' | 'test'>>,
  type: LifecycleType,
  data: LifecycleData = {},
  occurredAt = new Date(),
): OutboxMessage {
  const about = {
    email: email.to_email,
    subject: email.subject,
    ...(email.template_id ? { templateId: email.template_id } : {}),
  };
  const payload: LifecyclePayload = {
    projectId: email.project_id ?? '',
    contactId: email.contact_id ?? '',
    emailId: email.id ?? '',
    type,
    // A Timestamp in JSON: RFC 3339 in UTC, no fraction when it is zero (Dates carry milliseconds at most).
    occurredAt: occurredAt.toISOString().replace('.000Z', 'Z'),
    data: defined({ ...about, ...data }),
    // From the row: empty when the email has no campaign or workflow.
    campaignId: email.campaign_id ?? '',
    workflowId: email.workflow_id ?? '',
    test: email.test ?? false,
  };
  return { subject: emailLifecycleSubject(type), payload };
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
}

/**
 * The `deliveries.campaign_sent` messages of a delivery batch's sent emails: one per campaign, with its contacts (test
 * mail and mail of no campaign or contact have none). Each email still has its own `emails.sent`; the campaigns
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
