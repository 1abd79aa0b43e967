import { WipedProjects } from '@svc/lib/project-tombstones';
import { createRpcClient } from '@svc/lib/rpc-client';
import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { SegmentsService } from '@svc/proto/svc/segments/v1/segments_pb';
import { type CampaignsEnv, campaignsEnv } from './config.js';
import { subscribeCampaignsConsumers } from './consumers.js';
import { contactsPort } from './contacts-rpc.js';
import { Campaigns } from './domain/campaigns.js';
import { FanOut } from './domain/fan-out.js';
import { messagingPort } from './messaging-rpc.js';
import { campaignsRoutes } from './rpc.js';
import { segmentsPort } from './segments-rpc.js';
import { CampaignsStore } from './store/campaigns-store.js';
import { FanOutStore } from './store/fan-out-store.js';
import { migrations } from './store/migrations.js';
import { RecipientsStore } from './store/recipients-store.js';
import { startScheduler } from './workers/scheduler.js';

export async function startCampaigns(rt: Runtime<CampaignsEnv>): Promise<RunningService> {
  const { config } = rt;
  const logger = rt.logger.child({ service: 'campaigns' });
  const db = await openServiceDatabase('campaigns', rt, migrations);
  const store = new CampaignsStore(db.pool);
  const recipients = new RecipientsStore(db.pool);
  const fanOutStore = new FanOutStore(db.pool);
  const contacts = contactsPort(createRpcClient(ContactsService, config.rpcUrls.contacts, config));
  const messaging = messagingPort(createRpcClient(MessagingService, config.rpcUrls.messaging, config));
  const segments = segmentsPort(createRpcClient(SegmentsService, config.rpcUrls.segments, config));

  const identity = createRpcClient(IdentityService, config.rpcUrls.identity, config);
  const wiped = new WipedProjects(db.pool);
  await wiped.start(rt.bus);
  await subscribeCampaignsConsumers(rt.bus, recipients, store, identity, wiped, logger.child({ part: 'bus' }));
  const server = await serveRpc(
    rt,
    'campaigns',
    campaignsRoutes(new Campaigns(store, recipients, contacts, segments, messaging)),
    db,
  );
  const fanOut = new FanOut(
    fanOutStore,
    contacts,
    messaging,
    {
      batchSize: config.campaignBatchSize,
      parallel: 2,
      window: config.campaignSendWindow,
      // Within the lease: a slice that waits on its window must not outlive its claim.
      sliceMs: Math.min(5_000, (config.campaignLeaseSeconds * 1000) / 2),
      windowPollMs: 100,
    },
    logger.child({ part: 'fan-out' }),
  );
  const scheduler = await startScheduler(
    fanOutStore,
    fanOut,
    { leaseSeconds: config.campaignLeaseSeconds, pollMs: config.campaignPollMs, lanes: 4 },
    logger.child({ part: 'scheduler' }),
  );
  return {
    name: 'campaigns',
    async stop() {
      await scheduler.stop();
      await server.close();
      await db.close();
    },
  };
}

/** The registry loads this (services/registry.ts). */
export const service = serviceModule({ migrations, config: campaignsEnv, start: startCampaigns });
