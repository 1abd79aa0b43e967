import type { Logger } from '@svc/lib/logger';
import { startInboundSmtp } from './delivery/inbound-smtp.js';
import { InboundMail } from './domain/inbound-mail.js';
import { billingCapsFromIdentity } from '@svc/lib/billing-caps-identity';
import { EmailBilling } from './domain/email-billing.js';
import { MESSAGING_SERVICE } from './domain/email-events.js';
import { subscribeTopics } from '@svc/lib/bus-topic';
import { scrapeGauge } from '@svc/lib/metrics';
import { createRpcClient } from '@svc/lib/rpc-client';
import type { Pool } from '@svc/lib/db';
import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { ContactsService } from '@svc/proto/svc/contacts/v1/contacts_pb';
import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { WorkflowsService } from '@svc/proto/svc/workflows/v1/workflows_pb';
import { IDENTITY_TOPICS } from '@svc/proto/topics/identity';
import { WipedProjects } from '@svc/lib/project-tombstones';
import { joinProjectWipes } from '@svc/lib/project-wipe';
import { readBusMessage } from '@svc/lib/bus-topic';
import { RedisLink } from '@svc/lib/redis';
import { type MessagingEnv, messagingEnv } from './config.js';
import { contactsDirectory } from './contacts-rpc.js';
import { suspensionAuthority } from './identity-rpc.js';
import { templateUsage } from './workflows-rpc.js';
import { Reputation } from './domain/reputation.js';
import { SendingSuspensions } from './domain/sending-suspension.js';
import { BlockedDomains } from './domain/link-safety.js';
import { ProjectWipeStore } from './store/project-wipe-store.js';
import { ReputationStore } from './store/reputation-store.js';
import { startSmtpSink, type SmtpSink, type SmtpSinkOptions } from './delivery/smtp-sink.js';
import { createSmtpTransport } from './delivery/smtp-transport.js';
import { ActivityFeed, FEED_SUBSCRIPTION } from './domain/activity-feed.js';
import { DevMail } from './domain/dev-mail.js';
import { MarketingWithdrawals } from './domain/withdrawals.js';
import { withDevMailRoutes } from './dev-mail-rpc.js';
import { loadSandboxSender, SANDBOX_SENDER } from './domain/sandbox-sender.js';
import { DevMailStore } from './store/dev-mail-store.js';
import { EmailBatches } from './domain/email-batch.js';
import { EmailHistory } from './domain/email-history.js';
import { EmailTimeseries } from './domain/email-timeseries.js';
import { createDnsResolver } from './domain/dns-resolver.js';
import { ProviderWebhooks } from './domain/provider-webhooks.js';
import { createRenderer } from './domain/render.js';
import { SenderDomains } from './domain/sender-domains.js';
import { SendRecords } from './domain/send-records.js';
import { Sending } from './domain/sending.js';
import { Templates } from './domain/templates.js';
import { standingWaitMs, Tracking } from './domain/tracking.js';
import { TrackingTokens } from './domain/tracking-tokens.js';
import { messagingRoutes } from './rpc.js';
import { sendThrottle } from './send-throttle.js';
import { automatedHits, trackingHits } from './tracking-dedupe.js';
import { ActivityStore } from './store/activity-store.js';
import { DomainsStore } from './store/domains-store.js';
import { EmailsStore } from './store/emails-store.js';
import { migrations } from './store/migrations.js';
import { SendAttachmentsStore } from './store/send-attachments-store.js';
import { SendRecordsStore } from './store/send-records-store.js';
import { settingOnce } from './store/settings-store.js';
import { TemplatesStore } from './store/templates-store.js';
import { TimeseriesStore } from './store/timeseries-store.js';
import { S3ObjectStore } from './store/object-store.js';
import { Uploads } from './domain/uploads.js';
import { UploadsStore } from './store/uploads-store.js';
import { DeliveryWorker } from './workers/delivery-worker.js';
import { startDomainChecker } from './workers/domain-checker.js';
import { startSendRecordsCleanup } from './workers/send-records-cleanup.js';

/** With no SMTP_URL, mail goes to a sink on loopback that keeps it for GET /dev/mail. */
async function localSink(port: number, onMessage?: SmtpSinkOptions['onMessage']): Promise<SmtpSink> {
  try {
    return await startSmtpSink({ port, onMessage });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    return startSmtpSink({ port: 0, onMessage });
  }
}

const EMBEDDED_INBOUND_PORT = 2526;

/** The inbound listener; embedded mode's default port falls back to a free one when taken. */
async function inboundListener(
  inbound: InboundMail,
  o: { host: string; port: number; logger: Logger; fallback: boolean },
): Promise<{ port: number; close(): Promise<void> }> {
  try {
    return await startInboundSmtp(inbound, o);
  } catch (err) {
    if (!o.fallback || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    return startInboundSmtp(inbound, { ...o, port: 0 });
  }
}

export async function startMessaging(
  rt: Runtime<MessagingEnv>,
  opts: { embedded?: boolean } = {},
): Promise<RunningService> {
  const { config } = rt;
  const logger = rt.logger.child({ service: MESSAGING_SERVICE });
  // Distributed mode, the relay's claim keeps the planner's bitmap: a delivery batch's transaction stays open while it
  // sends, so an index scan could not mark the dead entries published rows leave (lib/src/outbox.ts, planSettings).
  // Embedded mode takes the index scan: the bitmap read every row deleted since the last vacuum, each pass (6% of
  // PostgreSQL's time in bench/send.ts, growing with the run), and its short batches let the scan mark them.
  const db = await openServiceDatabase(MESSAGING_SERVICE, rt, migrations, {
    relayPlanSettings: rt.embedded ? undefined : '',
  });

  // Embedded mode with the local sink: the sink keeps its mail in the database for GET /dev/mail, and
  // the sandbox sender exists. Never with SMTP_URL or in distributed mode (no real mail can leave from it).
  const sinkMode = !!opts.embedded && !config.smtpUrl;
  const devMail = sinkMode ? new DevMail(new DevMailStore(db.pool)) : undefined;
  const sandbox = sinkMode ? await loadSandboxSender(db.pool) : undefined;
  let devSink: SmtpSink | undefined;
  let smtpUrl = config.smtpUrl;
  if (!smtpUrl) {
    devSink = await localSink(config.embeddedSmtpPort, devMail && ((m) => devMail.record(m)));
    smtpUrl = devSink.url;
    if (!opts.embedded)
      logger.warn({ port: devSink.port }, 'SMTP_URL is not set: mail goes to a local sink and is not delivered');
    else
      logger.info({ port: devSink.port, sandboxSender: SANDBOX_SENDER }, 'local SMTP sink started; see GET /dev/mail');
  }

  const dns = createDnsResolver({ servers: config.dnsServers, timeoutMs: 2000 });
  const renderer = createRenderer();
  const tokens = new TrackingTokens(await settingOnce(db.pool, 'tracking_secret'));
  const contacts = contactsDirectory(createRpcClient(ContactsService, config.rpcUrls.contacts, config));
  const domainsStore = new DomainsStore(db.pool);
  const emailsStore = new EmailsStore(db.pool);
  const domains = new SenderDomains(domainsStore, dns, {
    spfInclude: `_spf.${new URL(config.publicUrl).hostname}`,
    logger,
    sandbox,
  });
  const workflows = templateUsage(createRpcClient(WorkflowsService, config.rpcUrls.workflows, config));
  const templates = new Templates(new TemplatesStore(db.pool), domains, renderer, workflows);
  const activityStore = new ActivityStore(db.pool);
  // One Redis connection for the send throttle and the tracking marks.
  const redis =
    config.redisUrl === undefined
      ? undefined
      : new RedisLink(config.redisUrl, {
          commandTimeoutMs: config.redisCommandTimeoutMs,
          logger,
          degradedTo:
            'send throttle, repeated opens and clicks and click bursts counted per messaging replica until it is back',
        });
  const hits = trackingHits(config, redis);
  const wiped = new WipedProjects(db.pool);
  await wiped.start(rt.bus);
  const activity = new ActivityFeed(activityStore, emailsStore, wiped);
  // Billing caps (README "Billing"): only emails are counted here.
  const billingCaps = billingCapsFromIdentity(config, logger, (projectId, _category, since) =>
    emailsStore.countBillable(projectId, since),
  );
  const sendRecords = new SendRecords(new SendRecordsStore(db.pool, config.idempotencyTtlSeconds));
  const identity = createRpcClient(IdentityService, config.rpcUrls.identity, config);
  const authority = suspensionAuthority(identity);
  const suspensions = new SendingSuspensions(authority, config.suspensionCacheSeconds);
  // Every replica drops its cached view when identity suspends, reinstates or deletes the project.
  const { projectSuspended, projectReinstated, projectDeleted } = IDENTITY_TOPICS;
  rt.bus.watch([projectSuspended.subject, projectReinstated.subject, projectDeleted.subject], (m) => {
    const message =
      m.subject === projectSuspended.subject
        ? readBusMessage(projectSuspended, m.data)
        : m.subject === projectReinstated.subject
          ? readBusMessage(projectReinstated, m.data)
          : readBusMessage(projectDeleted, m.data);
    suspensions.forget(message.projectId);
  });
  const tracking = new Tracking(db.pool, emailsStore, tokens, contacts, hits, automatedHits(config, redis), {
    standing: suspensions,
    blocked: new BlockedDomains(config.trackingBlockedDomains),
    waitMs: standingWaitMs(config.rpcTimeoutMs),
  });
  const reputation = new Reputation(new ReputationStore(db.pool), suspensions, authority, config.reputationMinVolume);

  const server = await serveRpc(
    rt,
    MESSAGING_SERVICE,
    withDevMailRoutes(
      devMail,
      messagingRoutes({
        logger,
        domains,
        templates,
        sending: new Sending({
          batches: new EmailBatches({
            emails: emailsStore,
            attachments: new SendAttachmentsStore(db.pool),
            templates,
            domains,
            renderer,
            tokens,
            publicUrl: config.publicUrl,
            records: sendRecords,
            activity: activityStore,
            caps: billingCaps.caps,
          }),
          contacts,
          records: sendRecords,
          suspensions,
        }),
        tracking,
        webhooks: new ProviderWebhooks(db.pool, emailsStore),
        activity,
        timeseries: new EmailTimeseries(new TimeseriesStore(db.pool)),
        history: new EmailHistory(emailsStore),
        dns,
        devMail,
        uploads: new Uploads(new UploadsStore(db.pool), config.s3 && new S3ObjectStore(config.s3)),
        billing: new EmailBilling(billingCaps.caps, emailsStore),
        reputation,
        suspensions,
      }),
    ),
    db,
  );

  // Withdrawals read the feed's delivery of `events.tracked` rather than a consumer of their own.
  const withdrawals = new MarketingWithdrawals(db.pool, emailsStore);
  await subscribeTopics(
    rt.bus,
    'messaging-activity',
    wiped.routes([...activity.routes(), ...withdrawals.routes()]),
    logger,
    FEED_SUBSCRIPTION,
  );

  // Inbound mail (README "Inbound mail"): on with INBOUND_SMTP_PORT, and in embedded mode on 2526 (or a free port).
  const inboundPort = config.inboundSmtpPort ?? (opts.embedded ? EMBEDDED_INBOUND_PORT : undefined);
  const inbound =
    inboundPort === undefined
      ? undefined
      : await inboundListener(new InboundMail({ pool: db.pool, domains: domainsStore, contacts, tracking, logger }), {
          host: config.bindHost,
          port: inboundPort,
          logger,
          fallback: config.inboundSmtpPort === undefined,
        });
  if (inbound) logger.info({ port: inbound.port }, 'inbound SMTP listening');
  await subscribeTopics(rt.bus, 'messaging-reputation', wiped.routes(reputation.routes()), logger);
  const wipes = new ProjectWipeStore(db.pool);
  await joinProjectWipes(rt.bus, {
    service: MESSAGING_SERVICE,
    identity,
    wiped,
    logger,
    wipe: (p) => wipes.wipe(p),
  });

  const transport = createSmtpTransport(smtpUrl, config.smtpPoolSize);
  const throttle = sendThrottle(config, redis);
  const worker = new DeliveryWorker(db.pool, emailsStore, domainsStore, transport, throttle, logger, {
    maxAttempts: config.sendMaxAttempts,
    retryBaseMs: config.sendRetryBaseMs,
    sandbox,
    dkimWorkers: config.dkimWorkers,
    dkimThreadNice: config.dkimThreadNice,
    wiped,
  });
  await worker.start();
  watchSendQueue(db.pool);
  const checker = await startDomainChecker(domains, config.domainCheckIntervalSeconds, logger);
  const cleanup = startSendRecordsCleanup(sendRecords, logger);

  return {
    name: MESSAGING_SERVICE,
    async stop() {
      cleanup.stop();
      await server.close();
      await checker.stop();
      await worker.stop();
      redis?.disconnect();
      billingCaps.close();
      transport.close();
      await devSink?.close();
      await inbound?.close();
      wiped.stop();
      await db.close();
    },
  };
}

/**
 * Send queue gauges, read when scraped: depth of the unfinished statuses (partial indexes
 * emails_due and emails_leased serve both counts) and the age of the oldest due message.
 */
function watchSendQueue(pool: Pool): void {
  scrapeGauge({
    name: 'email_queue_depth',
    help: 'Messages in the send queue by status: queued (waiting or due) and sending (leased)',
    labelNames: ['status'],
    read: async () => {
      const { rows } = await pool.query<{ status: string; n: string }>(
        `SELECT s.status, (SELECT count(*) FROM emails e WHERE e.status = s.status)::text AS n
         FROM (VALUES ('queued'), ('sending')) AS s(status)`,
      );
      return rows.map((r) => ({ labels: { status: r.status }, value: Number(r.n) }));
    },
  });
  scrapeGauge({
    name: 'email_queue_oldest_due_seconds',
    help: 'How long the oldest due queued message has waited past its send time (0: none due)',
    labelNames: [],
    read: async () => {
      const { rows } = await pool.query<{ age: number | null }>(
        `SELECT extract(epoch FROM now() - min(next_attempt_at))::float8 AS age
         FROM emails WHERE status = 'queued' AND next_attempt_at <= now()`,
      );
      return [{ labels: {}, value: rows[0].age ?? 0 }];
    },
  });
}

/** The registry loads this (services/registry.ts). Embedded mode with no SMTP_URL shows the sink at GET /dev/mail. */
export const service = serviceModule({
  migrations,
  config: messagingEnv,
  start: (rt) => startMessaging(rt, { embedded: rt.embedded }),
});

// The local SMTP sink, for the tests' and benchmarks' own mail server.
export { startSmtpSink, type SmtpSink } from './delivery/smtp-sink.js';
