import { topic } from '@svc/lib/bus-topic';
import {
  ProjectCreatedSchema,
  ProjectDeletedSchema,
  ProjectKeysRotatedSchema,
  ProjectReinstatedSchema,
  ProjectSuspendedSchema,
  ProjectWipeRequestedSchema,
  UserCreatedSchema,
} from '../gen/svc/identity/v1/events_pb.js';

/** Subjects the identity service publishes, and their messages. */
export const IDENTITY_TOPICS = {
  userCreated: topic('identity.user.created', UserCreatedSchema),
  projectCreated: topic('identity.project.created', ProjectCreatedSchema),
  projectDeleted: topic('identity.project.deleted', ProjectDeletedSchema),
  projectKeysRotated: topic('identity.project.keys_rotated', ProjectKeysRotatedSchema),
  projectWipeRequested: topic('identity.project.wipe_requested', ProjectWipeRequestedSchema),
  projectSuspended: topic('identity.project.suspended', ProjectSuspendedSchema),
  projectReinstated: topic('identity.project.reinstated', ProjectReinstatedSchema),
} as const;
