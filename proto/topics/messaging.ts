import { topic } from '@svc/lib/bus-topic';
import { CampaignEmailsSentSchema, EmailLifecycleSchema, EmailsSentSchema } from '../gen/svc/messaging/v1/events_pb.js';

/** Subjects the messaging service publishes: `emails.<type>` for each lifecycle step. */
export const MESSAGING_TOPICS = {
  emailLifecycle: topic('emails.>', EmailLifecycleSchema),
  /** A delivery batch's sent emails of one campaign, many per message (the campaigns service's sent counter). */
  campaignEmailsSent: topic('deliveries.campaign_sent', CampaignEmailsSentSchema),
  /**
   * A delivery batch's sent emails of one project, many per message: the delivery worker's `emails.sent`, which it no
   * longer publishes one by one (contacts and workflows read these; upgrade them before messaging).
   */
  emailsSent: topic('deliveries.emails_sent', EmailsSentSchema),
} as const;

export const emailLifecycleSubject = (type: string) => `emails.${type}`;

/** One member of the `emails.>` family, for a consumer that needs only some types (fewer deliveries). */
export const emailLifecycleTopic = (type: string) => topic(emailLifecycleSubject(type), EmailLifecycleSchema);
