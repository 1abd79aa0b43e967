import { openServiceDatabase, serveRpc, type RunningService, type Runtime } from '@svc/lib/runtime';
import { serviceModule } from '@svc/lib/services';
import { Audiences } from './domain/audiences.js';
import { Bulk } from './domain/bulk.js';
import { Contacts } from './domain/contacts.js';
import { ContactUpserts } from './domain/contact-upserts.js';
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

export async function startContacts(rt: Runtime): Promise<RunningService> {
  const db = await openServiceDatabase('contacts', rt, migrations);
  const contactsStore = new ContactsStore(db.pool);
  const eventsStore = new EventsStore(db.pool);
  const fieldsStore = new FieldsStore(db.pool);
  const jobsStore = new JobsStore(db.pool);
  const contacts = new Contacts(db.pool, contactsStore, eventsStore, fieldsStore);
  const batches = new ContactBatches(db.pool);
  const events = new Events(contacts, eventsStore, batches);
  const imports = new Imports(
    jobsStore,
    batches,
    contacts,
    fieldsStore,
    rt.logger.child({ service: 'contacts', part: 'imports' }),
  );
  const bulk = new Bulk(jobsStore, contacts);
  const segmentsStore = new SegmentsStore(db.pool);
  const segmentConditions = new SegmentConditions(segmentsStore);
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
    segmentEvents: new SegmentEvents(db.pool, eventsStore, contactsStore),
    contacts: contactsStore,
    forgetTypes: (p) => contacts.forgetTypes(p),
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
        audiences: new Audiences(contactsStore, segmentConditions),
        segments: new Segments(segmentsStore, segmentConditions),
        imports,
        bulk,
        kickJobs: () => runner.kick(),
      },
      rt.logger.child({ service: 'contacts', part: 'rpc' }),
    ),
    db,
  );
  return {
    name: 'contacts',
    async stop() {
      await server.close();
      await runner.stop();
      await db.close();
    },
  };
}

/** The registry loads this (services/registry.ts); contacts reads only platform-wide variables. */
export const service = serviceModule({ start: startContacts });
