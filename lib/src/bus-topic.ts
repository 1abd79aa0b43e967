import {
  create,
  fromJson,
  toJson,
  type DescMessage,
  type JsonValue,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import { subjectMatches, type Bus, type BusMessage, type SubscribeOptions } from './bus.js';
import type { Logger } from './logger.js';
import { tracedHandler } from './tracing.js';

/**
 * A bus subject and the proto message it carries, declared once by the service that owns it
 * (proto/topics/<domain>.ts). `subject` may end in a wildcard (`emails.>`) for a family of
 * subjects that share one message.
 */
export interface Topic<D extends DescMessage> {
  readonly subject: string;
  readonly schema: D;
}

export const topic = <D extends DescMessage>(subject: string, schema: D): Topic<D> => ({ subject, schema });

/** An outbox row: what `enqueueMessage` / `enqueueMany` (lib/outbox.ts) take. */
export interface OutboxMessage {
  subject: string;
  payload: JsonValue;
}

/**
 * The outbox row of a message: its proto3 JSON (lowerCamelCase names, RFC 3339 timestamps,
 * Struct fields as plain objects), so the stored and published payload stays readable and a
 * consumer built on an older schema still reads it (unknown fields are ignored). Scalars at their
 * default (`subscribed: false`, an empty id) are written too: the documented shapes have every key.
 * `subject` names one member of a wildcard topic's family (`emails.open` of `emails.>`).
 */
export function busMessage<D extends DescMessage>(
  t: Topic<D>,
  init: MessageInitShape<D>,
  subject = t.subject,
): OutboxMessage {
  if (subject.includes('*') || subject.endsWith('>') || !subjectMatches(t.subject, subject)) {
    throw new Error(`subject ${subject} is not a concrete subject of topic ${t.subject}`);
  }
  return { subject, payload: toJson(t.schema, create(t.schema, init), { alwaysEmitImplicit: true }) };
}

/** A consumer's view of a received payload, as the generated type; throws on a payload of the wrong shape. */
export function readBusMessage<D extends DescMessage>(t: Topic<D>, data: unknown): MessageShape<D> {
  return fromJson(t.schema, data as JsonValue, { ignoreUnknownFields: true });
}

/** One topic a consumer reads and what it does with each message, as the generated type. */
export interface TopicRoute {
  readonly subject: string;
  /** RouteOptions.skip: true when `deliver` would acknowledge the payload without decoding it. */
  skip?(data: unknown): boolean;
  /** Decodes (throws `MalformedMessage`) then runs the handler (its errors are redelivered). */
  deliver(message: BusMessage): Promise<void>;
}

/** A payload that does not decode as its topic's message: redelivery cannot fix it. */
export class MalformedMessage extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

export interface RouteOptions {
  /**
   * Looks at the payload as received (JSON, not decoded): true acknowledges the message without decoding it or
   * running the handler. For consumers that already know, from a cached answer, that the handler would do
   * nothing (a project that tracks no segment): the decode is most of a skipped message's cost.
   */
  skip?(data: unknown): boolean;
}

/** A string field of a received payload, or '' (for `RouteOptions.skip`, before any decode). */
export const rawField = (data: unknown, field: string): string => {
  const v = data && typeof data === 'object' ? (data as Record<string, unknown>)[field] : undefined;
  return typeof v === 'string' ? v : '';
};

export function on<D extends DescMessage>(
  t: Topic<D>,
  handler: (message: MessageShape<D>, meta: { id: string; subject: string }) => Promise<void>,
  options?: RouteOptions,
): TopicRoute {
  const skip = options?.skip;
  return {
    subject: t.subject,
    skip,
    async deliver(m) {
      if (skip?.(m.data)) return;
      let message: MessageShape<D>;
      try {
        message = readBusMessage(t, m.data);
      } catch (err) {
        throw new MalformedMessage(err);
      }
      await handler(message, { id: m.id, subject: m.subject });
    },
  };
}

/** A batch message as received: its project and its items, each in the JSON form its single message has. */
export interface BatchItems {
  projectId: string;
  items: unknown[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A route for a topic whose message is one project's items (`{projectId, <field>: [..]}`: `events.tracked_batch`,
 * `contacts.created_batch`). The payload is read as received, not decoded: the handler reads each item itself (as
 * received, or through readBatchItem), so an item it cannot read skips that item only, not the message. A payload
 * in another form (proto field names) is decoded and handed over as toJson writes it; one that does not decode is
 * malformed.
 */
export function onBatch<D extends DescMessage>(
  t: Topic<D>,
  field: string,
  handler: (batch: BatchItems, meta: { id: string; subject: string }) => Promise<void>,
  options?: RouteOptions,
): TopicRoute {
  if (!t.schema.fields.some((f) => f.jsonName === field && f.fieldKind === 'list'))
    throw new Error(`${t.schema.typeName} has no repeated field ${field}`);
  const skip = options?.skip;
  const asReceived = (data: unknown): BatchItems | undefined =>
    isRecord(data) && typeof data.projectId === 'string' && Array.isArray(data[field])
      ? { projectId: data.projectId, items: data[field] }
      : undefined;
  const read = (data: unknown): BatchItems => {
    const batch = asReceived(data);
    if (batch) return batch;
    try {
      return asReceived(toJson(t.schema, readBusMessage(t, data), { alwaysEmitImplicit: true }))!;
    } catch (err) {
      throw new MalformedMessage(err);
    }
  };
  return {
    subject: t.subject,
    skip,
    async deliver(m) {
      if (skip?.(m.data)) return;
      await handler(read(m.data), { id: m.id, subject: m.subject });
    },
  };
}

/** One item of a batch (onBatch) decoded as `schema` (its single message's), or undefined when it does not decode. */
export function readBatchItem<D extends DescMessage>(schema: D, item: unknown): MessageShape<D> | undefined {
  try {
    return fromJson(schema, item as JsonValue, { ignoreUnknownFields: true });
  } catch {
    return undefined;
  }
}

/** Concrete subjects whose matching routes a consumer remembers (a topic family has a handful of members). */
const MATCHED_SUBJECTS = 1024;

/**
 * A durable consumer of typed topics. A message that does not decode is poison: it is logged
 * (with its id `<service>-<outbox id>`, to find the outbox row) and acknowledged, so it cannot
 * wedge the consumer with endless redeliveries. A handler's own failure (database down) is not
 * acknowledged: the bus redelivers it with backoff. `options.concurrency` > 1: messages are handled
 * that many at once, out of order (for handlers that batch their writes). Several routes may read one
 * topic: each gets every message of it from the one delivery, in the order given (a later route's failure
 * redelivers the message to the earlier ones too, which their idempotence absorbs).
 */
export async function subscribeTopics(
  bus: Bus,
  durable: string,
  routes: TopicRoute[],
  logger: Logger,
  options?: SubscribeOptions,
): Promise<void> {
  // The routes of each subject delivered, matched once: a consumer of many routes (the activity feed's) would
  // otherwise split every route's pattern and the subject again for each message.
  const bySubject = new Map<string, TopicRoute[]>();
  const routesOf = (subject: string): TopicRoute[] => {
    let matched = bySubject.get(subject);
    if (!matched) {
      matched = routes.filter((r) => subjectMatches(r.subject, subject));
      if (bySubject.size < MATCHED_SUBJECTS) bySubject.set(subject, matched);
    }
    return matched;
  };
  // A message every matching route would skip need not be delivered at all (SubscribeOptions.skip): in embedded
  // mode most of a /v1/send's deliveries are such (segments, workflows and campaigns track nothing of it).
  const skip = (subject: string, data: unknown): boolean => {
    const matched = routesOf(subject);
    return matched.length > 0 && matched.every((r) => r.skip?.(data) === true);
  };
  await bus.subscribe(
    durable,
    [...new Set(routes.map((r) => r.subject))],
    // Traces on: each delivery in a consumer span under the message's producer span (lib/tracing.ts).
    tracedHandler(durable, bus.system, async (m) => {
      for (const route of routesOf(m.subject)) {
        try {
          await route.deliver(m);
        } catch (err) {
          if (!(err instanceof MalformedMessage)) throw err;
          logger.error(
            { event: 'bus.malformed', err, durable, subject: m.subject, id: m.id },
            'malformed bus message skipped (acknowledged, not redelivered)',
          );
        }
      }
    }),
    routes.some((r) => r.skip) ? { ...options, skip } : options,
  );
}
