import { busMessage, type OutboxMessage } from '@svc/lib/bus-topic';
import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import type { ProjectRow, UserRow } from '../store/identity-store.js';

// The messages identity publishes (README "Messages on the bus"): ids and names.

export const userCreated = (u: Pick<UserRow, 'id' | 'email'>): OutboxMessage =>
  busMessage(IDENTITY_TOPICS.userCreated, { userId: u.id, email: u.email });

export const projectCreated = (p: Pick<ProjectRow, 'id' | 'name'>): OutboxMessage =>
  busMessage(IDENTITY_TOPICS.projectCreated, { projectId: p.id, name: p.name });

export const projectDeleted = (projectId: string): OutboxMessage =>
  busMessage(IDENTITY_TOPICS.projectDeleted, { projectId });

export const projectKeysRotated = (projectId: string): OutboxMessage =>
  busMessage(IDENTITY_TOPICS.projectKeysRotated, { projectId });

export const projectWipeRequested = (w: {
  wipeId: string;
  projectId: string;
  kind: string;
  services: string[];
}): OutboxMessage => busMessage(IDENTITY_TOPICS.projectWipeRequested, w);

export const projectSuspended = (s: {
  projectId: string;
  suspensionId: string;
  metric: string;
  rate: number;
  reason: string;
}): OutboxMessage => busMessage(IDENTITY_TOPICS.projectSuspended, s);

export const projectReinstated = (s: { projectId: string; suspensionId: string; liftedBy: string }): OutboxMessage =>
  busMessage(IDENTITY_TOPICS.projectReinstated, s);
