import { WipedProjects } from '@svc/lib/project-tombstones';
import { DueWorkLoop } from '@svc/lib/due-work';
import { NotifiedCache } from '@svc/lib/notified-cache';
import { createRpcClient } from '@svc/lib/rpc-client';
import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { MessagingService } from '@svc/proto/svc/messaging/v1/messaging_pb';
import { SegmentsService } from '@svc/proto/svc/segments/v1/segments_pb';
import { type WorkflowsEnv, workflowsEnv } from './config.js';
import { contactsPort } from './contacts-rpc.js';
import { subscribeWorkflowsConsumers } from './consumers.js';
import { Engine } from './domain/engine.js';
import { Executions } from './domain/executions.js';
import { hostResolver } from './domain/webhook.js';
import { Workflows } from './domain/workflows.js';
import { mailChecksPort, mailPort } from './messaging-rpc.js';
import { segmentChecksPort } from './segments-rpc.js';
import { workflowsRoutes } from './rpc.js';
import { DUE_CHANNEL, type ExecutionRow, ExecutionsStore } from './store/executions-store.js';
import { migrations } from './store/migrations.js';
import { WorkflowsStore } from './store/workflows-store.js';

export async function startWorkflows(rt: Runtime<WorkflowsEnv>): Promise<RunningService> {
  const { config } = rt;
  const logger = rt.logger.child({ service: 'workflows' });
  const db = await openServiceDatabase('workflows', rt, migrations);
  const contactsClient = createRpcClient(ContactsService, config.rpcUrls.contacts, config);
  const contacts = contactsPort(contactsClient);
  const messaging = createRpcClient(MessagingService, config.rpcUrls.messaging, config);
  const mail = mailPort(messaging);
  const store = new WorkflowsStore(db.pool);
  const executionsStore = new ExecutionsStore(db.pool);
  const fields = {
    async fields(projectId: string) {
      return (await contactsClient.listFields({ projectId })).fields.map((f) => ({ field: f.field, type: f.type }));
    },
  };
  const workflows = new Workflows(
    store,
    executionsStore,
    fields,
    mailChecksPort(messaging),
    segmentChecksPort(createRpcClient(SegmentsService, config.rpcUrls.segments, config)),
  );
  // Trigger interests and graphs, forgotten on any workflow edit (store migration 003).
  const cache = new NotifiedCache(db.pool, 'workflows_changed', logger);
  await cache.start();
  const executions = new Executions(store, executionsStore, contacts, logger, cache);
  const engine = new Engine(
    store,
    executionsStore,
    contacts,
    mail,
    {
      allowPrivate: config.webhookAllowPrivate,
      timeoutMs: config.webhookTimeoutMs,
      maxAttempts: config.webhookMaxAttempts,
      retryBaseMs: config.webhookRetryBaseMs,
      resolve: hostResolver(config.dnsServers),
    },
    logger.child({ part: 'engine' }),
    config.workflowLeaseMs,
    cache,
  );
  const worker = new DueWorkLoop<ExecutionRow>({
    name: 'workflow-executions',
    logger,
    claim: (limit) => executionsStore.claim(limit, config.workflowLeaseMs),
    run: (rows) => engine.runClaimed(rows),
    // Executions enrolled one bus message after another are claimed in batches: the emails of a SEND_EMAIL step go
    // out in one QueueEmails call per claimed batch, and messaging's cost per call and per statement is shared by
    // more of them (bench/workflow.ts: QueueEmails of ~40 recipients became ~110-140, ~10% less CPU per execution).
    batchSize: 500,
    lanes: 4,
    gatherMs: 50,
    pollMs: config.workflowPollMs,
    notify: { pool: db.pool, channel: DUE_CHANNEL },
  });
  await worker.start();
  // Awaited events are only looked back on from a wait's step start: a day is far more than needed.
  const prune = setInterval(() => {
    executionsStore.pruneAwaited(86_400_000).catch((err) => logger.warn({ err }, 'pruning awaited events failed'));
  }, 600_000);
  prune.unref();
  const identity = createRpcClient(IdentityService, config.rpcUrls.identity, config);
  const wiped = new WipedProjects(db.pool);
  await wiped.start(rt.bus);
  await subscribeWorkflowsConsumers(rt.bus, executions, store, identity, wiped, logger.child({ part: 'bus' }));
  const server = await serveRpc(rt, 'workflows', workflowsRoutes(workflows, executions, store), db);
  return {
    name: 'workflows',
    async stop() {
      clearInterval(prune);
      await server.close();
      await worker.stop();
      await cache.stop();
      await db.close();
    },
  };
}

/** The registry loads this (services/registry.ts) with the variables in config.ts validated. */
export const service = serviceModule({ migrations, config: workflowsEnv, start: startWorkflows });
