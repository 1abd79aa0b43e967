import pg from 'pg';
import { payloadValue, type Bus, type BusMessage, type JsonText } from './bus.js';
import { MemoryBus } from './bus-memory.js';
import { createPool, withTransaction, type Pool } from './db.js';
import { createLogger } from './logger.js';
import { migrate } from './migrate.js';
import { enqueue, enqueueMany, OUTBOX_MIGRATIONS, OutboxRelay } from './outbox.js';
import { contextFrom, currentContext, parseTraceparent, runInContext, type RequestContext } from './request-context.js';

const ADMIN = 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `outbox_test_${process.pid}_${Date.now().toString(36)}`;
const logger = createLogger('silent');
let pool: Pool;

beforeAll(async () => {
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  pool = createPool(ADMIN.replace(/\/postgres$/, `/${dbName}`));
  await migrate(pool, OUTBOX_MIGRATIONS);
});

afterAll(async () => {
  await pool.end();
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
});

beforeEach(async () => {
  await pool.query('TRUNCATE outbox');
});

function recordingBus(): Bus & { got: BusMessage[]; failNext: number } {
  const got: BusMessage[] = [];
  return {
    got,
    failNext: 0,
    async publish(subject, data, id, context) {
      if (this.failNext > 0) {
        this.failNext--;
        throw new Error('bus down');
      }
      const headers = { requestId: context?.requestId ?? undefined, traceparent: context?.traceparent ?? undefined };
      // JetStream's Nats-Msg-Id dedupe
      if (!got.some((m) => m.id === id)) got.push({ id, subject, data: payloadValue(data), ...headers });
    },
    async subscribe() {},
    watch() {},
    connected: () => true,
    async close() {},
  };
}

describe('outbox relay', () => {
  test('publishes committed messages in order with <service>-<id> message ids, once', async () => {
    const bus = recordingBus();
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger });
    await withTransaction(pool, async (tx) => {
      await enqueue(tx, 'contacts.created', { n: 1 });
      await enqueue(tx, 'contacts.updated', { n: 2 });
    });
    await enqueueMany(pool, [
      { subject: 'events.tracked', payload: { n: 3 } },
      { subject: 'contacts.updated', payload: { n: 4 } },
    ]);
    expect(await relay.drain()).toBe(4);
    expect(bus.got.map((m) => (m.data as { n: number }).n)).toEqual([1, 2, 3, 4]);
    expect(bus.got.every((m) => /^svc-\d+$/.test(m.id))).toBe(true);
    expect(await relay.drain()).toBe(0);
    expect(bus.got).toHaveLength(4);
  });

  test('a payload is kept and published as the JSON text written (json, lz4 where the server has it)', async () => {
    const texts: string[] = [];
    const bus = {
      ...recordingBus(),
      async publish(_s: string, data: unknown) {
        texts.push((data as JsonText).text);
      },
    };
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger });
    // Large enough to be compressed; jsonb would have printed it back with its keys reordered and spaces added.
    const payload = { zeta: 1, alpha: Array.from({ length: 2000 }, (_, n) => ({ emailId: `e-${n}`, type: 'sent' })) };
    await enqueueMany(pool, [{ subject: 'deliveries.emails_sent', payload }]);
    await enqueue(pool, 'contacts.created', { b: 1, a: 'x' });
    expect(await relay.drain()).toBe(2);
    expect(texts).toEqual([JSON.stringify(payload), '{"b":1,"a":"x"}']);
    const { rows } = await pool.query<{ type: string; compression: string }>(
      `SELECT format_type(atttypid, atttypmod) AS type, attcompression AS compression FROM pg_attribute
       WHERE attrelid = 'outbox'::regclass AND attname = 'payload'`,
    );
    expect(rows[0].type).toBe('json');
    const lz4 = await pool.query(
      `SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)`,
    );
    expect(rows[0].compression).toBe(lz4.rowCount ? 'l' : '');
  });

  test('a batch whose ids gain a digit (99 -> 100) goes out in id order, not in their text order', async () => {
    const bus = recordingBus();
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger });
    await pool.query(`SELECT setval(pg_get_serial_sequence('outbox', 'id'), 95)`);
    await enqueueMany(
      pool,
      Array.from({ length: 8 }, (_, n) => ({ subject: 'contacts.updated', payload: { n } })),
    );
    expect(await relay.drain()).toBe(8);
    expect(bus.got.map((m) => m.id)).toEqual(Array.from({ length: 8 }, (_, n) => `svc-${96 + n}`));
  });

  test('a rolled-back transaction publishes nothing', async () => {
    const bus = recordingBus();
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger });
    await expect(
      withTransaction(pool, async (tx) => {
        await enqueue(tx, 'contacts.created', { n: 1 });
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    expect(await relay.drain()).toBe(0);
    expect(bus.got).toEqual([]);
  });

  test('messages survive a bus failure and go out on the next pass, each once', async () => {
    const bus = recordingBus();
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger });
    await enqueueMany(
      pool,
      [1, 2, 3].map((n) => ({ subject: 'events.tracked', payload: { n } })),
    );
    bus.failNext = 1;
    await expect(relay.drain()).rejects.toThrow('bus down');
    expect(await relay.drain()).toBe(3);
    expect(bus.got.map((m) => (m.data as { n: number }).n).sort()).toEqual([1, 2, 3]);
    expect(await relay.drain()).toBe(0);
  });

  test('published rows stay, marked, for a replay; with keepPublished false they are deleted', async () => {
    const rows = async () =>
      (
        await pool.query<{ n: number; published: boolean }>(
          "SELECT (payload->>'n')::int AS n, published_at IS NOT NULL AS published FROM outbox ORDER BY id",
        )
      ).rows;
    const kept = new OutboxRelay({ service: 'svc', pool, bus: recordingBus(), logger });
    await enqueueMany(pool, [{ subject: 'events.tracked', payload: { n: 1 } }]);
    expect(await kept.drain()).toBe(1);
    expect(await rows()).toEqual([{ n: 1, published: true }]);

    const bus = recordingBus();
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger, keepPublished: false });
    await enqueueMany(
      pool,
      [2, 3, 4].map((n) => ({ subject: 'events.tracked', payload: { n } })),
    );
    bus.failNext = 1;
    // The first publish failed: nothing deleted; then each row once (the bus's dedupe), and gone.
    await expect(relay.drain()).rejects.toThrow('bus down');
    expect((await rows()).map((r) => r.n)).toEqual([1, 2, 3, 4]);
    expect(await relay.drain()).toBe(3);
    expect(bus.got.map((m) => (m.data as { n: number }).n).sort()).toEqual([2, 3, 4]);
    expect(await rows()).toEqual([{ n: 1, published: true }]);
    expect(await relay.drain()).toBe(0);
    expect(bus.got).toHaveLength(3);
  });

  test('the relay wakes on NOTIFY and delivers to in-process subscribers, which see each message id once', async () => {
    const bus = new MemoryBus(logger);
    const seen: BusMessage[] = [];
    await bus.subscribe('test', ['contacts.>'], async (m) => {
      seen.push(m);
    });
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger, pollMs: 60_000 });
    await relay.start();
    try {
      await enqueue(pool, 'contacts.created', { n: 1 });
      const deadline = Date.now() + 5000;
      while (!seen.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(seen).toHaveLength(1);
      await bus.publish('contacts.created', { n: 1 }, seen[0].id);
      expect(seen).toHaveLength(1);
    } finally {
      await relay.stop();
    }
  });

  test('an in-process subscriber that fails is retried', async () => {
    const bus = new MemoryBus(logger);
    let attempts = 0;
    await bus.subscribe('flaky', ['events.>'], async () => {
      attempts++;
      if (attempts < 3) throw new Error('not yet');
    });
    await bus.publish('events.tracked', {}, 'x-1');
    expect(attempts).toBe(3);
  });
});

describe('request context through the outbox', () => {
  const ctx = contextFrom({ requestId: 'req-outbox-test', traceparent: undefined });

  test('rows carry the writing request (new span, same trace); rows written outside a request carry none', async () => {
    const bus = recordingBus();
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger });
    const other: RequestContext = contextFrom({ requestId: 'req-other-one', traceparent: undefined });
    await runInContext(ctx, async () => {
      await enqueue(pool, 'contacts.created', { n: 1 });
      await enqueueMany(pool, [
        { subject: 'events.tracked', payload: { n: 2 } },
        { subject: 'events.tracked', payload: { n: 3 }, context: { requestId: other.requestId, traceparent: null } },
      ]);
    });
    await enqueue(pool, 'contacts.updated', { n: 4 });
    expect(await relay.drain()).toBe(4);
    expect(bus.got.map((m) => m.requestId)).toEqual(['req-outbox-test', 'req-outbox-test', 'req-other-one', undefined]);
    for (const m of bus.got.slice(0, 2)) {
      expect(parseTraceparent(m.traceparent)).toMatchObject({ traceId: ctx.traceId });
      expect(parseTraceparent(m.traceparent)?.parentId).not.toBe(ctx.parentId);
    }
  });

  test('an in-process consumer runs inside the context of the request that wrote the message', async () => {
    const bus = new MemoryBus(logger);
    const contexts: Array<RequestContext | undefined> = [];
    await bus.subscribe('ctx', ['contacts.>'], async () => {
      contexts.push(currentContext());
    });
    const relay = new OutboxRelay({ service: 'svc', pool, bus, logger });
    await runInContext(ctx, () => enqueue(pool, 'contacts.created', { n: 1 }));
    await enqueue(pool, 'contacts.created', { n: 2 });
    await relay.drain();
    expect(contexts[0]).toMatchObject({ requestId: 'req-outbox-test', traceId: ctx.traceId });
    expect(contexts[1]).toBeUndefined();
  });
});

describe('in-process bus', () => {
  test('a subscriber sees pipelined messages one at a time, in publish order', async () => {
    const bus = new MemoryBus(logger);
    const seen: number[] = [];
    let inFlight = 0;
    await bus.subscribe('ordered', ['events.>'], async (m) => {
      inFlight++;
      expect(inFlight).toBe(1);
      await new Promise((r) => setTimeout(r, 5 - ((m.data as { n: number }).n % 5)));
      seen.push((m.data as { n: number }).n);
      inFlight--;
    });
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((n) => bus.publish('events.tracked', { n }, `o-${n}`)));
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test('watchers get matching messages as published; a failing watcher stops neither publish nor others', async () => {
    const bus = new MemoryBus(logger);
    const seen: string[] = [];
    bus.watch(['identity.project.*'], () => {
      throw new Error('watcher bug');
    });
    bus.watch(['identity.project.deleted'], (m) =>
      seen.push(`${m.subject}:${(m.data as { projectId: string }).projectId}`),
    );
    await bus.publish('identity.project.deleted', { projectId: 'p1' }, 'w-1');
    await bus.publish('identity.project.created', { projectId: 'p2' }, 'w-2');
    await bus.publish('identity.project.deleted', { projectId: 'p1' }, 'w-1'); // a duplicate id is dropped
    expect(seen).toEqual(['identity.project.deleted:p1']);
  });
});
