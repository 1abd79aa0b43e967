import { WipedProjects } from '@svc/lib/project-tombstones';
import { createRpcClient } from '@svc/lib/rpc-client';
import { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { Audiences } from './domain/audiences.js';
import { billingCapsFromIdentity } from '@svc/lib/billing-caps-identity';
import { Bulk } from './domain/bulk.js';
import { ContactBilling } from './domain/contact-billing.js';
import { Contacts } from './domain/contacts.js';
import { ContactUpserts } from './domain/contact-upserts.js';
import { FilterIndexCatalog, FilterIndexLoop, reconcileFilterIndexes } from './domain/filter-indexes.js';
import { Events } from './domain/events.js';
import { Fields } from './domain/fields.js';
import { Imports } from './domain/imports.js';
import { JobRunner } from './domain/job-runner.js';
import { SegmentConditions } from './domain/segment-conditions.js';
import { SegmentEvents } from './domain/segment-events.js';
import { Segments } from './domain/segments.js';
import { contactsRoutes } from './rpc.js';
import { subscribeContactsConsumers } from './consumers.js';
import { ContactBatches, ContactsStore } from './store/contacts-store.js';
import { EventsStore } from './store/events-store.js';
import { FieldsStore } from './store/fields-store.js';
import { JobsStore } from './store/jobs-store.js';
import { SegmentsStore } from './store/segments-store.js';
import { migrations } from './store/migrations.js';
import { type ContactsEnv, contactsEnv } from './config.js';

export async function startContacts(rt: Runtime<ContactsEnv>): Promise<RunningService> {
  const db = await openServiceDatabase('contacts', rt, migrations);
  const contactsStore = new ContactsStore(db.pool);
  const eventsStore = new EventsStore(db.pool);
  const fieldsStore = new FieldsStore(db.pool);
  const jobsStore = new JobsStore(db.pool);
  const contacts = new Contacts(db.pool, contactsStore, eventsStore, fieldsStore);
  const batches = new ContactBatches(db.pool);
  const wiped = new WipedProjects(db.pool);
  await wiped.start(rt.bus);
  const events = new Events(contacts, eventsStore, batches, wiped);
  // Billing caps (README "Billing"): contacts held and client-tracked events of the month.
  const usage = async (projectId: string, since: Date) => {
    const [held, tracked] = await Promise.all([
      contactsStore.countAll(projectId),
      eventsStore.countCustomSince(projectId, since),
    ]);
    return { contacts: held, events: tracked };
  };
  const billingCaps = billingCapsFromIdentity(
    rt.config,
    rt.logger.child({ service: 'contacts' }),
    (p, category, since) =>
      category === 'contacts' ? contactsStore.countAll(p) : eventsStore.countCustomSince(p, since),
  );
  const imports = new Imports(
    jobsStore,
    batches,
    contacts,
    fieldsStore,
    rt.logger.child({ service: 'contacts', part: 'imports' }),
    billingCaps.caps,
  );
  const bulk = new Bulk(jobsStore, contacts);
  const segmentsStore = new SegmentsStore(db.pool);
  const segmentConditions = new SegmentConditions(segmentsStore);
  const filterIndexLog = rt.logger.child({ service: 'contacts', part: 'filter-indexes' });
  const filterIndexCatalog = new FilterIndexCatalog(db.pool);
  const filterIndexes = new FilterIndexLoop(
    (signal) => reconcileFilterIndexes(db.pool, rt.config.filterIndexMax, filterIndexLog, signal, filterIndexCatalog),
    filterIndexLog,
  );
  filterIndexes.start();
  const runner = new JobRunner(
    db.pool,
    [
      { name: 'import', claim: () => jobsStore.claimImport(), run: (job) => imports.process(job) },
      { name: 'bulk', claim: () => jobsStore.claimBulk(), run: (job) => bulk.process(job) },
    ],
    () => jobsStore.requeueExpiredLeases(),
    rt.logger.child({ service: 'contacts', part: 'jobs' }),
  );
  await runner.start();
  await subscribeContactsConsumers(rt.bus, {
    events,
    segmentEvents: new SegmentEvents(db.pool, eventsStore, wiped),
    wiped,
    contacts: contactsStore,
    forgetTypes: (p) => contacts.forgetTypes(p),
    identity: createRpcClient(IdentityService, rt.config.rpcUrls.identity, rt.config),
    logger: rt.logger.child({ service: 'contacts', part: 'bus' }),
  });

  const server = await serveRpc(
    rt,
    'contacts',
    contactsRoutes(
      {
        contacts,
        upserts: new ContactUpserts(db.pool, contacts),
        events,
        fields: new Fields(fieldsStore),
        audiences: new Audiences(contactsStore, segmentConditions, filterIndexCatalog),
        segments: new Segments(segmentsStore, segmentConditions, () => filterIndexes.kick()),
        imports,
        bulk,
        kickJobs: () => runner.kick(),
        billing: new ContactBilling(billingCaps.caps, contactsStore),
        usage,
      },
      rt.logger.child({ service: 'contacts', part: 'rpc' }),
    ),
    db,
  );
  return {
    name: 'contacts',
    async stop() {
      await server.close();
      filterIndexes.stop();
      await runner.stop();
      billingCaps.close();
      wiped.stop();
      await db.close();
    },
  };
}

/** The registry loads this (services/registry.ts). */
export const service = serviceModule({ migrations, config: contactsEnv, start: startContacts });
