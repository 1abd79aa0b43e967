import { randomUUID } from 'node:crypto';
import { createLogger } from '@svc/lib/logger';
import { createTestDatabase, type TestDatabase } from '@svc/lib/test-database';
import { CampaignsStore } from '../store/campaigns-store.js';
import { FanOutStore } from '../store/fan-out-store.js';
import { migrations } from '../store/migrations.js';
import { RecipientsStore } from '../store/recipients-store.js';
import { insertSendingCampaign } from '../store/test-campaigns.js';
import { FanOut } from './fan-out.js';
import type { AudienceContact, ContactsPort, MessagingPort, QueueResult } from './ports.js';

// The fan-out's crash safety on a real PostgreSQL with the service's own migrations. The contacts and
// messaging services are stand-ins here that keep their contracts: contacts streams in id order after
// `afterId`; messaging queues a dedupe key once and answers "duplicate" for it afterwards.

const PROJECT = randomUUID();
const logger = createLogger('silent');

let db: TestDatabase;
let campaigns: CampaignsStore;
let fanOutStore: FanOutStore;
let recipients: RecipientsStore;

const people: AudienceContact[] = Array.from({ length: 25 }, (_, i) => ({
  id: `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`,
  email: `p${i}@example.com`,
  subscribed: true,
  data: { n: i },
}));

const contacts: ContactsPort = {
  count: async () => people.length,
  async *stream(_p, _c, _s, afterId) {
    const rest = people.filter((p) => !afterId || p.id > afterId);
    for (let i = 0; i < rest.length; i += 10) yield rest.slice(i, i + 10);
  },
  lookup: async () => null,
};

/** Messaging's QueueEmails contract; `crashAfterQueue` makes the next call fail after it queued (a lost answer). */
class Messaging implements MessagingPort {
  readonly queued = new Map<string, string>();
  calls = 0;
  recipients = 0;
  crashAfterQueue = false;
  /** Answers for some contacts instead of queueing them (withheld at hand-over, a render error). */
  readonly answers = new Map<string, 'suppressed' | 'failed'>();
  /** Runs while a call is answered (say a cancel meanwhile). */
  during?: () => Promise<void>;
  senderVerified = async () => true;
  async queue(_p: string, _c: unknown, rs: Parameters<MessagingPort['queue']>[2]): Promise<QueueResult[]> {
    this.calls++;
    this.recipients += rs.length;
    await this.during?.();
    const out = rs.map((r) => {
      const answer = this.answers.get(r.contactId);
      if (answer) return { contactId: r.contactId, emailId: '', status: answer, error: answer === 'failed' ? 'x' : '' };
      const first = this.queued.get(r.dedupeKey!);
      if (first) return { contactId: r.contactId, emailId: first, status: 'duplicate', error: '' };
      const emailId = randomUUID();
      this.queued.set(r.dedupeKey!, emailId);
      return { contactId: r.contactId, emailId, status: 'queued', error: '' };
    });
    if (this.crashAfterQueue) {
      this.crashAfterQueue = false;
      throw new Error('connection reset after the batch was queued');
    }
    return out;
  }
}

const newCampaign = (): Promise<string> => insertSendingCampaign(campaigns, PROJECT);

const opts = { batchSize: 5, parallel: 1, window: 1000, sliceMs: 60_000 };
const status = async (id: string) => (await campaigns.byId(id))!.status;
/** Claims until `id` is leased (other tests' campaigns may be due too) and runs one slice. */
async function slice(fanOut: FanOut, id: string, leaseSeconds = 30): Promise<void> {
  for (const c of await fanOutStore.claim(10, leaseSeconds)) {
    if (c.id === id) await fanOut.run(c);
    else await fanOutStore.release(c.id, c.lease_token!, 0);
  }
}

beforeAll(async () => {
  db = await createTestDatabase('campaigns_fanout', migrations);
  campaigns = new CampaignsStore(db.pool);
  fanOutStore = new FanOutStore(db.pool);
  recipients = new RecipientsStore(db.pool);
});

afterAll(async () => {
  await db.drop();
});

describe('campaign fan-out', () => {
  test('a batch whose answer is lost is handed over again without queueing anyone twice', async () => {
    const id = await newCampaign();
    const messaging = new Messaging();
    const fanOut = new FanOut(fanOutStore, contacts, messaging, opts, logger);
    messaging.crashAfterQueue = true;
    await slice(fanOut, id); // snapshot, then the first batch fails after messaging queued it
    expect(messaging.queued.size).toBe(5);
    expect(await status(id)).toBe('SENDING');
    await db.pool.query('UPDATE campaigns SET run_at = now() WHERE id = $1', [id]);
    await slice(fanOut, id);
    expect(await status(id)).toBe('SENT');
    expect(messaging.queued.size).toBe(people.length);
    const counts = (await recipients.counts([id])).get(id)!;
    expect(counts).toMatchObject({ total: people.length, pending: 0, queued: people.length, failed: 0 });
    expect((await campaigns.byId(id))!.total_recipients).toBe(people.length);
  });

  test('replicas never hold one campaign at once; a dead holder is taken over when its lease expires', async () => {
    const id = await newCampaign();
    const [a, b] = await Promise.all([fanOutStore.claim(10, 1), fanOutStore.claim(10, 1)]);
    const holders = [a, b].filter((claimed) => claimed.some((c) => c.id === id));
    expect(holders).toHaveLength(1);
    const dead = holders[0].find((c) => c.id === id)!;
    expect((await fanOutStore.claim(10, 1)).some((c) => c.id === id)).toBe(false);
    await new Promise((r) => setTimeout(r, 1100)); // the lease (1 s) runs out: the holder is gone
    const taken = (await fanOutStore.claim(10, 30)).find((c) => c.id === id)!;
    expect(taken.lease_token).not.toBe(dead.lease_token);
    // The old holder's writes are fenced off; the new holder's go through.
    expect(await fanOutStore.addSnapshotBatch(id, dead.lease_token!, [], null, false)).toBe(false);
    const messaging = new Messaging();
    await new FanOut(fanOutStore, contacts, messaging, opts, logger).run(taken);
    expect(await status(id)).toBe('SENT');
    expect(messaging.queued.size).toBe(people.length);
  });

  test('a cancel stops the hand-over before the next batch; the pending recipients stay unsent', async () => {
    const id = await newCampaign();
    const messaging = new Messaging();
    const fanOut = new FanOut(fanOutStore, contacts, messaging, { ...opts, window: 5 }, logger);
    await slice(fanOut, id); // snapshot and one batch: the window (5) is then full
    expect(messaging.queued.size).toBe(5);
    expect((await campaigns.cancel(PROJECT, id))!.status).toBe('CANCELLED');
    await db.pool.query(`UPDATE campaign_recipients SET sent_at = now() WHERE campaign_id = $1`, [id]);
    expect(await fanOutStore.claim(10, 30)).not.toContainEqual(expect.objectContaining({ id }));
    expect((await recipients.counts([id])).get(id)).toMatchObject({ queued: 5, pending: people.length - 5 });
  });

  test('a lifecycle step counts once per recipient however often it arrives', async () => {
    const id = await newCampaign();
    await slice(new FanOut(fanOutStore, contacts, new Messaging(), opts, logger), id);
    const who = people[3].id;
    expect(await recipients.mark(id, who, 'open', new Date())).toBe(true);
    expect(await recipients.mark(id, who, 'open', new Date())).toBe(false);
    await Promise.all([1, 2, 3].map(() => recipients.mark(id, who, 'click', new Date())));
    await recipients.mark(id, randomUUID(), 'open', new Date()); // no such recipient: nothing
    const row = (await campaigns.byId(id))!;
    expect({ opened: row.opened_count, clicked: row.clicked_count }).toEqual({ opened: 1, clicked: 1 });
  });

  test('a batch of steps of two campaigns, with repeats, counts each once, at its earliest time', async () => {
    const [a, b] = [await newCampaign(), await newCampaign()];
    for (const id of [a, b]) await slice(new FanOut(fanOutStore, contacts, new Messaging(), opts, logger), id);
    const early = new Date(Date.now() - 60_000);
    const late = new Date();
    const mark = (campaignId: string, i: number, step: 'sent' | 'open', at = late) => ({
      campaignId,
      contactId: people[i].id,
      step,
      at,
    });
    const set = await recipients.markMany(db.pool, [
      mark(a, 0, 'sent', late),
      mark(a, 0, 'sent', early),
      mark(a, 1, 'sent'),
      mark(a, 1, 'open'),
      mark(b, 2, 'sent'),
      { ...mark(b, 2, 'sent'), contactId: randomUUID() }, // no such recipient: nothing
    ]);
    expect(set).toBe(4);
    // A redelivered batch changes nothing.
    expect(await recipients.markMany(db.pool, [mark(a, 0, 'sent'), mark(b, 2, 'sent')])).toBe(0);
    const [ra, rb] = [(await campaigns.byId(a))!, (await campaigns.byId(b))!];
    expect({ sent: ra.sent_count, opened: ra.opened_count }).toEqual({ sent: 2, opened: 1 });
    expect({ sent: rb.sent_count, opened: rb.opened_count }).toEqual({ sent: 1, opened: 0 });
    const { rows } = await db.pool.query(
      'SELECT sent_at FROM campaign_recipients WHERE campaign_id = $1 AND contact_id = $2',
      [a, people[0].id],
    );
    expect(rows[0].sent_at.getTime()).toBe(early.getTime());
  });

  describe('hand-over checkpoint', () => {
    const rowAnswers = async (id: string) =>
      (
        await db.pool.query(
          `SELECT contact_id, queue_status FROM campaign_recipients
           WHERE campaign_id = $1 AND handed_over_at IS NOT NULL ORDER BY contact_id`,
          [id],
        )
      ).rows;
    const campaignRow = async (id: string) => (await campaigns.byId(id))!;

    test('a round moves the checkpoint in one write; only answers not queued go on their rows', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      messaging.answers.set(people[2].id, 'suppressed');
      messaging.answers.set(people[7].id, 'failed');
      await slice(new FanOut(fanOutStore, contacts, messaging, opts, logger), id);
      expect(await status(id)).toBe('SENT');
      expect(await rowAnswers(id)).toEqual([
        { contact_id: people[2].id, queue_status: 'suppressed' },
        { contact_id: people[7].id, queue_status: 'failed' },
      ]);
      const row = await campaignRow(id);
      expect(row.handover_after).toBe(people[people.length - 1].id);
      expect(Number(row.handover_queued)).toBe(people.length - 2);
      expect((await recipients.counts([id])).get(id)).toMatchObject({
        total: people.length,
        pending: 0,
        queued: people.length - 2,
        suppressed: 1,
        failed: 1,
      });
    });

    test('the window holds the checkpoint queued recipients until each is sent, bounced or withdrawn', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      await slice(new FanOut(fanOutStore, contacts, messaging, { ...opts, window: 5 }, logger), id);
      expect(messaging.recipients).toBe(5); // one round, then the window is full
      expect(await fanOutStore.inFlight(id)).toBe(5);
      const at = new Date();
      const mark = (i: number, step: 'sent' | 'bounce' | 'open') => ({
        campaignId: id,
        contactId: people[i].id,
        step,
        at,
      });
      await recipients.markMany(db.pool, [mark(0, 'sent'), mark(1, 'sent'), mark(0, 'open')]);
      expect(await fanOutStore.inFlight(id)).toBe(3);
      await recipients.markMany(db.pool, [mark(2, 'bounce'), mark(1, 'sent')]); // 1 was sent before
      expect(await fanOutStore.inFlight(id)).toBe(2);
      expect(await recipients.markWithdrawn(id, people[3].id)).toBe(true);
      expect(await recipients.markWithdrawn(id, people[3].id)).toBe(false);
      expect(await recipients.markWithdrawn(id, people[1].id)).toBe(false); // already sent
      expect(await fanOutStore.inFlight(id)).toBe(1);
      expect((await recipients.counts([id])).get(id)).toMatchObject({ pending: 20, queued: 4, suppressed: 1 });
      // A bounce after the message was sent counts it as ended twice: the window errs larger, never smaller.
      await recipients.markMany(db.pool, [mark(0, 'bounce')]);
      expect(await fanOutStore.inFlight(id)).toBe(0);
      // The window has room again: the next slice hands over as many as it allows.
      await db.pool.query('UPDATE campaigns SET run_at = now() WHERE id = $1', [id]);
      await slice(new FanOut(fanOutStore, contacts, messaging, { ...opts, window: 5 }, logger), id);
      expect(messaging.recipients).toBe(10);
      expect(await fanOutStore.inFlight(id)).toBe(5);
    });

    test('mail sent before a lost answer is recorded leaves the window right once the round is resent', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      const fanOut = new FanOut(fanOutStore, contacts, messaging, { ...opts, window: 5 }, logger);
      messaging.crashAfterQueue = true;
      await slice(fanOut, id); // messaging queued 5, the answer was lost: no checkpoint
      expect((await campaignRow(id)).handover_after).toBeNull();
      // Their emails.sent messages come before the round is sent again.
      const at = new Date();
      await recipients.markMany(
        db.pool,
        [0, 1].map((i) => ({ campaignId: id, contactId: people[i].id, step: 'sent' as const, at })),
      );
      await db.pool.query('UPDATE campaigns SET run_at = now() WHERE id = $1', [id]);
      // The same 5 again (duplicates, counted queued once): 2 of them ended, so the window takes 2 more.
      await slice(fanOut, id);
      expect(messaging.recipients).toBe(12);
      expect(messaging.queued.size).toBe(7);
      expect(await fanOutStore.inFlight(id)).toBe(5);
      expect((await recipients.counts([id])).get(id)).toMatchObject({ pending: 18, queued: 7 });
    });

    test('recipients an older release recorded per row are not handed over again and hold the window', async () => {
      const id = await newCampaign();
      const [claimed] = (await fanOutStore.claim(10, 30)).filter((c) => c.id === id);
      for (const c of await fanOutStore.claim(10, 30)) await fanOutStore.release(c.id, c.lease_token!, 0);
      const token = claimed.lease_token!;
      const snapshot = people.map((p) => ({ contactId: p.id, email: p.email, subscribed: true, variables: p.data }));
      expect(await fanOutStore.addSnapshotBatch(id, token, snapshot, people[people.length - 1].id, true)).toBe(true);
      // The release before the checkpoint handed over the first 5 and wrote each answer on its row.
      await fanOutStore.recordHandOver(
        id,
        people.slice(0, 5).map((p) => ({ contactId: p.id, emailId: randomUUID(), status: 'queued', error: null })),
      );
      expect(await fanOutStore.inFlight(id)).toBe(5);
      // Their emails.sent are handled (by either release: the counters are the same).
      await recipients.markMany(
        db.pool,
        [0, 1].map((i) => ({ campaignId: id, contactId: people[i].id, step: 'sent' as const, at: new Date() })),
      );
      expect(await fanOutStore.inFlight(id)).toBe(3);
      const messaging = new Messaging();
      await new FanOut(fanOutStore, contacts, messaging, opts, logger).run({ ...claimed, snapshot_done: true });
      expect(await status(id)).toBe('SENT');
      expect(messaging.recipients).toBe(people.length - 5);
      expect((await recipients.counts([id])).get(id)).toMatchObject({ pending: 0, queued: people.length });
      // 3 of the rows and 20 of the checkpoint; the 2 sent rows also lower the checkpoint's share (errs low).
      expect(await fanOutStore.inFlight(id)).toBe(3 + 20 - 2);
    });

    test('a cancel while messaging answers a round records it on its rows and moves no checkpoint', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      messaging.during = async () => {
        messaging.during = undefined;
        // The snapshot, streaming beside the hand-over, completes first (a cancel during it: the test below).
        while (!(await campaignRow(id)).snapshot_done) await new Promise((r) => setTimeout(r, 5));
        await campaigns.cancel(PROJECT, id);
      };
      await slice(new FanOut(fanOutStore, contacts, messaging, opts, logger), id);
      expect(await status(id)).toBe('CANCELLED');
      expect(messaging.recipients).toBe(5);
      expect((await campaignRow(id)).handover_after).toBeNull();
      expect((await rowAnswers(id)).map((r) => r.contact_id)).toEqual(people.slice(0, 5).map((p) => p.id));
      expect((await recipients.counts([id])).get(id)).toMatchObject({ pending: 20, queued: 5 });
    });
  });

  describe('hand-over beside the snapshot', () => {
    /** Streams the first batch (10), then holds the rest until `release` is called; `fail` makes it throw there. */
    const heldStream = (opts: { fail?: boolean } = {}) => {
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const port: ContactsPort = {
        ...contacts,
        async *stream(_p, _c, _s, afterId) {
          const rest = people.filter((p) => !afterId || p.id > afterId);
          for (let i = 0; i < rest.length; i += 10) {
            if (i === 10) {
              await held;
              if (opts.fail) throw new Error('contacts went away mid-stream');
            }
            yield rest.slice(i, i + 10);
          }
        },
      };
      return { port, release };
    };
    const campaignRow = async (id: string) => (await campaigns.byId(id))!;

    test('starts before the snapshot is complete and never passes its checkpoint', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      const { port, release } = heldStream();
      const seen: { snapshotDone: boolean; after: string; last: string }[] = [];
      const queue = messaging.queue.bind(messaging);
      messaging.queue = async (p: string, c: unknown, rs: Parameters<MessagingPort['queue']>[2]) => {
        const row = await campaignRow(id);
        seen.push({ snapshotDone: row.snapshot_done, after: row.snapshot_after!, last: rs[rs.length - 1].contactId });
        if (seen.length === 2) release(); // the snapshot goes on once the hand-over caught up with it
        return queue(p, c, rs);
      };
      await slice(new FanOut(fanOutStore, port, messaging, opts, logger), id);
      expect(await status(id)).toBe('SENT');
      expect(seen[0].snapshotDone).toBe(false);
      expect(seen[0].after).toBe(people[9].id);
      for (const s of seen) expect(s.last <= s.after).toBe(true);
      expect(messaging.queued.size).toBe(people.length);
      expect(messaging.recipients).toBe(people.length);
    });

    test('a snapshot failing mid-stream ends the slice; the next resumes both, sending nobody twice', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      const failing = heldStream({ fail: true });
      messaging.during = async () => {
        if (messaging.calls === 2) failing.release();
      };
      await slice(new FanOut(fanOutStore, failing.port, messaging, opts, logger), id);
      const row = await campaignRow(id);
      expect(row.status).toBe('SENDING');
      expect(row.snapshot_done).toBe(false);
      expect(row.total_recipients).toBe(10);
      expect(row.last_error).toBe('contacts went away mid-stream');
      expect(messaging.queued.size).toBeLessThanOrEqual(10);
      await db.pool.query('UPDATE campaigns SET run_at = now() WHERE id = $1', [id]);
      messaging.during = undefined;
      await slice(new FanOut(fanOutStore, contacts, messaging, opts, logger), id);
      expect(await status(id)).toBe('SENT');
      expect(messaging.queued.size).toBe(people.length);
      expect((await recipients.counts([id])).get(id)).toMatchObject({ total: people.length, pending: 0 });
    });

    test('a checkpoint moved while the hand-over found nobody pending still wakes it (no lost wake-up)', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      const { port, release } = heldStream();
      messaging.during = async () => {
        if (messaging.calls === 2) release(); // the snapshot's second batch waits for the hand-over's second call
      };
      // The hand-over's first read of pending recipients finds none; the snapshot's first batch commits (and moves
      // the checkpoint) after that read and before the hand-over, told "caught up", waits for the next checkpoint.
      let firstRead!: () => void;
      const read = new Promise<void>((r) => (firstRead = r));
      let firstCommit!: () => void;
      const committed = new Promise<void>((r) => (firstCommit = r));
      const store = Object.create(fanOutStore) as FanOutStore;
      let reads = 0;
      store.pending = async (...args: Parameters<FanOutStore['pending']>) => {
        const rows = await fanOutStore.pending(...args);
        if (reads++ === 0) {
          expect(rows).toEqual([]);
          firstRead();
          await committed;
          await new Promise((r) => setImmediate(r)); // the snapshot's checkpoint moved in memory too
        }
        return rows;
      };
      store.addSnapshotBatch = async (...args: Parameters<FanOutStore['addSnapshotBatch']>) => {
        await read;
        const held = await fanOutStore.addSnapshotBatch(...args);
        firstCommit();
        return held;
      };
      await slice(new FanOut(store, port, messaging, opts, logger), id);
      expect(await status(id)).toBe('SENT');
      expect(messaging.queued.size).toBe(people.length);
    }, 15_000);

    test('a cancel during the snapshot stops the snapshot and the hand-over', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      const { port, release } = heldStream();
      messaging.during = async () => {
        messaging.during = undefined;
        await campaigns.cancel(PROJECT, id);
        release();
      };
      await slice(new FanOut(fanOutStore, port, messaging, opts, logger), id);
      const row = await campaignRow(id);
      expect(row.status).toBe('CANCELLED');
      expect(row.total_recipients).toBe(10);
      expect(messaging.recipients).toBe(5);
      expect((await recipients.counts([id])).get(id)).toMatchObject({ pending: 5, queued: 5 });
    });

    test('a full window is waited for inside the slice, without giving the campaign back', async () => {
      const id = await newCampaign();
      const messaging = new Messaging();
      // Every round is sent at once (its emails.sent handled), which frees the window a moment later.
      messaging.during = async () => {
        setTimeout(() => {
          const handed = [...messaging.queued.keys()].map((k) => k.split(':')[2]);
          void recipients.markMany(
            db.pool,
            handed.map((contactId) => ({ campaignId: id, contactId, step: 'sent' as const, at: new Date() })),
          );
        }, 20);
      };
      await slice(new FanOut(fanOutStore, contacts, messaging, { ...opts, window: 5, windowPollMs: 10 }, logger), id);
      expect(await status(id)).toBe('SENT');
      // One slice, one claim: without waiting, it would have given the campaign back after the first round.
      expect(messaging.recipients).toBe(people.length);
    });
  });
});
