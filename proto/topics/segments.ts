import { topic } from '@svc/lib/bus-topic';
import { MembershipChangedSchema } from '../gen/svc/segments/v1/events_pb.js';

/** Subjects the segments service publishes, and their messages. */
export const SEGMENTS_TOPICS = {
  membershipChanged: topic('segments.membership.changed', MembershipChangedSchema),
} as const;
