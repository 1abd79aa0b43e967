import { topic } from '@svc/lib/bus-topic';
import { EmailLifecycleSchema } from '../gen/svc/messaging/v1/events_pb.js';

/** Subjects the messaging service publishes: `emails.<type>` for each lifecycle step. */
export const MESSAGING_TOPICS = {
  emailLifecycle: topic('emails.>', EmailLifecycleSchema),
} as const;

export const emailLifecycleSubject = (type: string) => `emails.${type}`;

/** One member of the `emails.>` family, for a consumer that needs only some types (fewer deliveries). */
export const emailLifecycleTopic = (type: string) => topic(emailLifecycleSubject(type), EmailLifecycleSchema);
