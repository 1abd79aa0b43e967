import { DEFAULT_PORT } from '@svc/lib/config';
import { defineRegistry, type ServiceDefinition } from '@svc/lib/services';
import { CampaignsService } from '@svc/proto/svc/campaigns/v1/campaigns_pb';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { SegmentsService } from '@svc/proto/svc/segments/v1/segments_pb';
import { WorkflowsService } from '@svc/proto/svc/workflows/v1/workflows_pb';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import { MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import { SEGMENTS_TOPICS } from '@svc/proto/topics/segments';

/**
 * The platform's services, in start order (the gateway last: it calls the others). Adding a
 * service is one entry here; bin/platform.ts, the gateway's clients and readiness, the test
 * setup and the Helm chart's consistency test read this list. A service's code is imported
 * only when it runs (`load`), so reading the list starts nothing and imports no service.
 */
export const REGISTRY = defineRegistry({
  identity: {
    defaultPort: 50051,
    client: IdentityService,
    topics: IDENTITY_TOPICS,
    load: () => import('@svc/identity').then((m) => m.service),
  },
  contacts: {
    defaultPort: 50052,
    client: ContactsService,
    topics: CONTACTS_TOPICS,
    load: () => import('@svc/contacts').then((m) => m.service),
  },
  messaging: {
    defaultPort: 50053,
    client: MessagingService,
    topics: MESSAGING_TOPICS,
    load: () => import('@svc/messaging').then((m) => m.service),
  },
  // Publishes nothing on the bus: it reads messaging's lifecycle messages for its counters.
  campaigns: {
    defaultPort: 50054,
    client: CampaignsService,
    load: () => import('@svc/campaigns').then((m) => m.service),
  },
  segments: {
    defaultPort: 50055,
    client: SegmentsService,
    topics: SEGMENTS_TOPICS,
    load: () => import('@svc/segments').then((m) => m.service),
  },
  workflows: {
    defaultPort: 50056,
    client: WorkflowsService,
    load: () => import('@svc/workflows').then((m) => m.service),
  },
  gateway: { defaultPort: DEFAULT_PORT, edge: true, load: () => import('@svc/gateway').then((m) => m.service) },
});

export type ServiceName = keyof typeof REGISTRY;
export const SERVICES: ServiceDefinition[] = Object.values(REGISTRY);

/** What the Helm chart deploys (deploy/k8s/platform/services.json): each service that has code, on its default port. */
export function chartServices(): { services: Record<string, number> } {
  return { services: Object.fromEntries(SERVICES.filter((s) => s.load).map((s) => [s.name, s.defaultPort])) };
}
