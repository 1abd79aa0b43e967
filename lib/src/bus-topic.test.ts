import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { EventTrackedSchema } from '@svc/proto/svc/contacts/v1/events_pb';
import { CONTACTS_TOPICS } from '@svc/proto/topics/contacts';
import { MESSAGING_TOPICS } from '@svc/proto/topics/messaging';
import { MemoryBus } from './bus-memory.js';
import { busMessage, on, onBatch, readBatchItem, readBusMessage, subscribeTopics } from './bus-topic.js';
import { capturingLogger } from './test-logger.js';

const until = async (ok: () => boolean, ms = 2000) => {
  const deadline = Date.now() + ms;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  return ok();
};

describe('bus topics', () => {
  const at = new Date('2026-11-23T10:00:00.123Z');

  test('a message is stored as proto3 JSON with the names and shapes the README documents', () => {
    const m = busMessage(CONTACTS_TOPICS.created, {
      projectId: 'p1',
      contact: {
        id: 'c1',
        email: 'a@b.co',
        subscribed: true,
        data: { plan: 'pro', n: 2, tags: ['a'], nested: { x: null } },
        createdAt: timestampFromDate(at),
        updatedAt: timestampFromDate(new Date('2026-11-23T10:00:00Z')),
      },
    });
    expect(m).toEqual({
      subject: 'contacts.created',
      payload: {
        projectId: 'p1',
        contact: {
          id: 'c1',
          email: 'a@b.co',
          subscribed: true,
          data: { plan: 'pro', n: 2, tags: ['a'], nested: { x: null } },
          createdAt: '2026-11-23T10:00:00.123Z',
          updatedAt: '2026-11-23T10:00:00Z',
        },
      },
    });
  });

  test('scalars at their default are written, not left out (subscribed: false, an empty id)', () => {
    const m = busMessage(CONTACTS_TOPICS.updated, { projectId: 'p1', contact: { id: 'c1', subscribed: false } });
    expect(m.payload).toEqual({ projectId: 'p1', contact: { id: 'c1', email: '', subscribed: false } });
  });

  test('a wildcard topic is published under one concrete subject of its family', () => {
    expect(busMessage(MESSAGING_TOPICS.emailLifecycle, { type: 'open' }, 'emails.open').subject).toBe('emails.open');
    expect(() => busMessage(MESSAGING_TOPICS.emailLifecycle, { type: 'open' })).toThrow(/not a concrete subject/);
    expect(() => busMessage(MESSAGING_TOPICS.emailLifecycle, {}, 'contacts.created')).toThrow(/not a concrete subject/);
  });

  test('a consumer reads the generated type and ignores fields a newer publisher added', () => {
    const read = readBusMessage(CONTACTS_TOPICS.deleted, {
      projectId: 'p1',
      contactId: 'c1',
      email: 'a@b.co',
      addedLater: 1,
    });
    expect(read.$typeName).toBe('svc.contacts.v1.ContactDeleted');
    expect(read.contactId).toBe('c1');
  });

  test('a payload of the wrong shape is refused, not half-read', () => {
    expect(() => readBusMessage(CONTACTS_TOPICS.eventTracked, { projectId: 5 })).toThrow();
    expect(() => readBusMessage(CONTACTS_TOPICS.eventTracked, { createdAt: 'yesterday' })).toThrow();
    expect(() => readBusMessage(CONTACTS_TOPICS.eventTracked, 'text')).toThrow();
  });
});

describe('typed consumers', () => {
  test('a malformed message is logged and acknowledged; the messages after it are handled at once', async () => {
    const { logger, lines } = capturingLogger();
    const bus = new MemoryBus(logger);
    const seen: string[] = [];
    const route = on(CONTACTS_TOPICS.deleted, async (m) => {
      seen.push(m.contactId);
    });
    await subscribeTopics(bus, 'test', [route], logger);
    const started = Date.now();
    await bus.publish('contacts.deleted', { projectId: 'p1', contactId: ['not', 'a', 'string'] }, 'svc-1');
    await bus.publish(
      'contacts.deleted',
      busMessage(CONTACTS_TOPICS.deleted, { projectId: 'p1', contactId: 'c2' }).payload,
      'svc-2',
    );
    expect(seen).toEqual(['c2']);
    // Redelivering the poison (memory bus: up to 10 attempts with backoff) would have taken seconds.
    expect(Date.now() - started).toBeLessThan(1000);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        event: 'bus.malformed',
        durable: 'test',
        subject: 'contacts.deleted',
        id: 'svc-1',
      }),
    );
  });

  test("a handler's own failure is not taken for poison: the message is delivered again", async () => {
    const { logger, lines } = capturingLogger();
    const bus = new MemoryBus(logger);
    let attempts = 0;
    await subscribeTopics(
      bus,
      'flaky',
      [
        on(CONTACTS_TOPICS.deleted, async () => {
          attempts++;
          if (attempts < 3) throw new Error('database down');
        }),
      ],
      logger,
    );
    await bus.publish('contacts.deleted', { projectId: 'p1', contactId: 'c1' }, 'svc-1');
    expect(await until(() => attempts === 3)).toBe(true);
    expect(lines.filter((l) => l.event === 'bus.malformed')).toEqual([]);
  });

  test('one durable consumer routes each subject of its topics to that topic’s handler', async () => {
    const { logger } = capturingLogger();
    const bus = new MemoryBus(logger);
    const got: string[] = [];
    await subscribeTopics(
      bus,
      'feed',
      [
        on(MESSAGING_TOPICS.emailLifecycle, async (m) => {
          got.push(`${m.$typeName}:${m.type}`);
        }),
        on(CONTACTS_TOPICS.eventTracked, async (m) => {
          got.push(`${m.$typeName}:${m.name}`);
        }),
      ],
      logger,
    );
    const open = busMessage(MESSAGING_TOPICS.emailLifecycle, { type: 'open' }, 'emails.open');
    const tracked = busMessage(CONTACTS_TOPICS.eventTracked, { name: 'purchase' });
    await bus.publish(open.subject, open.payload, 'm-1');
    await bus.publish(tracked.subject, tracked.payload, 'c-1');
    expect(got).toEqual(['svc.messaging.v1.EmailLifecycle:open', 'svc.contacts.v1.EventTracked:purchase']);
  });

  test('two routes on one topic each get every message of it, in the order given, from one delivery', async () => {
    const { logger } = capturingLogger();
    const bus = new MemoryBus(logger);
    const got: string[] = [];
    let failSecond = true;
    await subscribeTopics(
      bus,
      'shared',
      [
        on(CONTACTS_TOPICS.eventTracked, async (m) => void got.push(`first:${m.name}`)),
        on(CONTACTS_TOPICS.eventTracked, async (m) => {
          // The second route's failure redelivers the message to both (each handler is idempotent).
          if (failSecond) {
            failSecond = false;
            throw new Error('database down');
          }
          got.push(`second:${m.name}`);
        }),
      ],
      logger,
    );
    const tracked = busMessage(CONTACTS_TOPICS.eventTracked, { name: 'signup' });
    await bus.publish(tracked.subject, tracked.payload, 'c-1');
    expect(await until(() => got.length === 3)).toBe(true);
    expect(got).toEqual(['first:signup', 'first:signup', 'second:signup']);
  });

  test('concurrency > 1 (in-process bus): messages are handled as they come, not one after another', async () => {
    const { logger } = capturingLogger();
    const bus = new MemoryBus(logger);
    let inHandler = 0;
    let most = 0;
    const route = on(MESSAGING_TOPICS.emailLifecycle, async () => {
      inHandler++;
      most = Math.max(most, inHandler);
      await new Promise((r) => setTimeout(r, 20));
      inHandler--;
    });
    await subscribeTopics(bus, 'counters', [route], logger, { concurrency: 16 });
    const sent = busMessage(MESSAGING_TOPICS.emailLifecycle, { type: 'sent' }, 'emails.sent');
    await Promise.all([1, 2, 3, 4].map((n) => bus.publish(sent.subject, sent.payload, `m-${n}`)));
    expect(most).toBe(4);
    await bus.close();
  });

  test('a message every route of its subject skips is not delivered; a route without one still gets it', async () => {
    const { logger } = capturingLogger();
    const bus = new MemoryBus(logger);
    const got: string[] = [];
    const handled: string[] = [];
    const wrapped = bus.subscribe.bind(bus);
    bus.subscribe = (durable, subjects, handler, options) =>
      wrapped(
        durable,
        subjects,
        async (m) => {
          handled.push(m.id);
          await handler(m);
        },
        options,
      );
    const skip = { skip: (d: unknown) => (d as { campaignId?: string }).campaignId === '' };
    await subscribeTopics(
      bus,
      'picky',
      [
        on(MESSAGING_TOPICS.emailLifecycle, async (m) => void got.push(`lifecycle:${m.campaignId}`), skip),
        on(CONTACTS_TOPICS.eventTracked, async (m) => void got.push(`tracked:${m.name}`)),
      ],
      logger,
    );
    const none = busMessage(MESSAGING_TOPICS.emailLifecycle, { type: 'sent' }, 'emails.sent');
    const one = busMessage(MESSAGING_TOPICS.emailLifecycle, { type: 'sent', campaignId: 'c' }, 'emails.sent');
    const tracked = busMessage(CONTACTS_TOPICS.eventTracked, { name: 'signup' });
    await bus.publish(none.subject, none.payload, 'm-1');
    await bus.publish(one.subject, one.payload, 'm-2');
    await bus.publish(tracked.subject, tracked.payload, 'c-1');
    expect(got).toEqual(['lifecycle:c', 'tracked:signup']);
    expect(handled).toEqual(['m-2', 'c-1']);
    await bus.close();
  });
});

describe('batch topics (onBatch)', () => {
  const event = (contactId: string) => ({ projectId: 'p1', contactId, eventId: `e-${contactId}`, name: 'x', data: {} });

  test("a batch is handed over as received, each item as it came; an unreadable item is the handler's", async () => {
    const { logger, lines } = capturingLogger();
    const bus = new MemoryBus(logger);
    const seen: unknown[] = [];
    const route = onBatch(CONTACTS_TOPICS.eventsTrackedBatch, 'events', async (b, meta) => {
      seen.push([meta.id, b.projectId, b.items.map((i) => readBatchItem(EventTrackedSchema, i)?.contactId ?? null)]);
    });
    await subscribeTopics(bus, 'test', [route], logger);
    const items = [event('c1'), { ...event('c2'), contactId: 7 }, event('c3')];
    await bus.publish('events.tracked_batch', { projectId: 'p1', events: items }, 'svc-1');
    // In proto field names: decoded, and its items handed over as toJson writes them.
    await bus.publish('events.tracked_batch', { project_id: 'p1', events: [event('c4')] }, 'svc-2');
    // No batch at all: malformed, logged and acknowledged.
    await bus.publish('events.tracked_batch', { projectId: 'p1', events: 'none' }, 'svc-3');
    await bus.publish('events.tracked_batch', { projectId: 'p1', events: [] }, 'svc-4');
    expect(seen).toEqual([
      ['svc-1', 'p1', ['c1', null, 'c3']],
      ['svc-2', 'p1', ['c4']],
      ['svc-4', 'p1', []],
    ]);
    expect(lines).toContainEqual(expect.objectContaining({ event: 'bus.malformed', id: 'svc-3' }));
    expect(lines.filter((l) => l.event === 'bus.malformed')).toHaveLength(1);
  });

  test("a batch's skip reads the payload as received: a skipped batch is not read at all", async () => {
    const { logger } = capturingLogger();
    const bus = new MemoryBus(logger);
    const seen: string[] = [];
    const route = onBatch(CONTACTS_TOPICS.eventsTrackedBatch, 'events', async (b) => void seen.push(b.projectId), {
      skip: (d) => (d as { projectId?: string }).projectId === 'quiet',
    });
    await subscribeTopics(bus, 'test', [route], logger);
    await bus.publish('events.tracked_batch', { projectId: 'quiet', events: 'not even a list' }, 'svc-1');
    await bus.publish('events.tracked_batch', { projectId: 'p1', events: [event('c1')] }, 'svc-2');
    expect(seen).toEqual(['p1']);
  });

  test('a field that is not a repeated field of the topic is refused when the route is made', () => {
    expect(() => onBatch(CONTACTS_TOPICS.eventsTrackedBatch, 'contacts', async () => {})).toThrow(/no repeated field/);
  });
});
