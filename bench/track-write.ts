/**
 * The contacts side of /v1/track without HTTP, RPC or bus: `Events.track` in waves of BENCH_BATCH
 * concurrent tracks (each wave one group commit), BENCH_EVENTS events over BENCH_EMAILS addresses,
 * the bench's body. Prints CPU ms per event of this process and of its PostgreSQL backend, which a
 * loaded box moves less than any rate.
 */
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '@svc/lib/test-database';
import { Contacts } from '../services/contacts/src/domain/contacts.js';
import { Events } from '../services/contacts/src/domain/events.js';
import { ContactBatches, ContactsStore } from '../services/contacts/src/store/contacts-store.js';
import { EventsStore } from '../services/contacts/src/store/events-store.js';
import { FieldsStore } from '../services/contacts/src/store/fields-store.js';
import { migrations } from '../services/contacts/src/store/migrations.js';
import { databaseCpu, fmt } from './support.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20000);
const BATCH = Number(process.env.BENCH_BATCH ?? 25);
const EMAILS = Number(process.env.BENCH_EMAILS ?? 10000);

const db = await createTestDatabase('bench_track_write', migrations);
try {
  const contacts = new Contacts(
    db.pool,
    new ContactsStore(db.pool),
    new EventsStore(db.pool),
    new FieldsStore(db.pool),
  );
  const events = new Events(contacts, new EventsStore(db.pool), new ContactBatches(db.pool));
  const projectId = randomUUID();
  const wave = (from: number) =>
    Promise.all(
      Array.from({ length: BATCH }, (_, k) => {
        const i = from + k;
        return events.track({
          projectId,
          email: `user-${i % EMAILS}@bench.example.com`,
          event: 'page.viewed',
          data: { plan: ['free', 'pro', 'team'][i % 3], visits: i, page: { path: `/p/${i % 50}` } },
        });
      }),
    );
  for (let i = 0; i < EMAILS; i += BATCH) await wave(i); // every contact exists: the steady state
  const backends = await databaseCpu(db.pool);
  const pgCpu = backends.seconds;
  const self0 = process.cpuUsage();
  const pg0 = pgCpu();
  const t0 = performance.now();
  for (let i = EMAILS; i < EMAILS + EVENTS; i += BATCH) await wave(i);
  const wall = performance.now() - t0;
  const self = process.cpuUsage(self0);
  const pg = pgCpu() - pg0;
  const commits = (await db.pool.query<{ n: number }>('SELECT count(DISTINCT created_at)::int AS n FROM events'))
    .rows[0].n;
  const ms = (s: number) => fmt((1000 * s) / EVENTS, 3);
  console.log(
    `${fmt(EVENTS)} events in waves of ${BATCH} (${fmt(commits)} commits in all): ` +
      `node ${ms((self.user + self.system) / 1e6)} ms/event, PostgreSQL ${ms(pg)} ms/event, ` +
      `wall ${fmt(wall / EVENTS, 3)} ms/event (backends ${backends.backends})`,
  );
} finally {
  await db.drop();
}
