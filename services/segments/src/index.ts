import { WipedProjects } from '@svc/lib/project-tombstones';
import { NotifiedCache } from '@svc/lib/notified-cache';
import { createRpcClient } from '@svc/lib/rpc-client';
import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { CampaignsService } from '@svc/proto/svc/campaigns/v1/campaigns_pb';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { WorkflowsService } from '@svc/proto/svc/workflows/v1/workflows_pb';
import { campaignUsage } from './campaigns-rpc.js';
import { contactsPort } from './contacts-rpc.js';
import { subscribeSegmentsConsumers } from './consumers.js';
import { Segments } from './domain/segments.js';
import { Tracking } from './domain/tracking.js';
import { MembershipDeliveries } from './membership-deliveries.js';
import { segmentsRoutes } from './rpc.js';
import { MembershipsStore } from './store/memberships-store.js';
import { migrations } from './store/migrations.js';
import { SegmentsStore } from './store/segments-store.js';
import { workflowUsage } from './workflows-rpc.js';

export async function startSegments(rt: Runtime): Promise<RunningService> {
  const db = await openServiceDatabase('segments', rt, migrations);
  const store = new SegmentsStore(db.pool);
  const contacts = contactsPort(createRpcClient(ContactsService, rt.config.rpcUrls.contacts, rt.config));
  const campaigns = createRpcClient(CampaignsService, rt.config.rpcUrls.campaigns, rt.config);
  const workflows = createRpcClient(WorkflowsService, rt.config.rpcUrls.workflows, rt.config);
  const tracksAny = new NotifiedCache(db.pool, 'segments_tracking_changed', rt.logger.child({ service: 'segments' }));
  await tracksAny.start();
  const identity = createRpcClient(IdentityService, rt.config.rpcUrls.identity, rt.config);
  const busLogger = rt.logger.child({ service: 'segments', part: 'bus' });
  const deliveries = new MembershipDeliveries(db.pool, store, rt.bus, busLogger);
  const tracking = new Tracking(db.pool, store, new MembershipsStore(), contacts, tracksAny, deliveries);
  const wiped = new WipedProjects(db.pool);
  await wiped.start(rt.bus);
  deliveries.start(await subscribeSegmentsConsumers(rt.bus, tracking, store, identity, wiped, busLogger));
  const server = await serveRpc(
    rt,
    'segments',
    segmentsRoutes(new Segments(store, contacts, tracking, campaignUsage(campaigns), workflowUsage(workflows))),
    db,
  );
  return {
    name: 'segments',
    async stop() {
      await server.close();
      await deliveries.stop();
      await tracksAny.stop();
      await db.close();
    },
  };
}

/** The registry loads this (services/registry.ts); segments reads only platform-wide variables. */
export const service = serviceModule({ migrations, start: startSegments });
