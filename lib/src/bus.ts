/**
 * The message bus between services. Publishers go through the outbox (lib/outbox.ts);
 * subscribers are durable and must be idempotent: delivery is at least once.
 */
export interface BusMessage {
  /** Stable id (`<service>-<outbox id>`): the dedupe key, also for idempotent consumers. */
  id: string;
  /** Subject without the deployment prefix, e.g. `contacts.updated`. */
  subject: string;
  data: unknown;
  /** The request that wrote the message (headers `X-Request-Id`, `traceparent`); absent outside a request. */
  requestId?: string;
  traceparent?: string;
}

/** What a message carries of the request that wrote it (the outbox row's columns). */
export interface MessageContext {
  requestId?: string | null;
  traceparent?: string | null;
}

export type BusHandler = (message: BusMessage) => Promise<void>;

export interface SubscribeOptions {
  /**
   * Messages handled at once (default 1: one after another, in order). More is for handlers that do
   * not depend on order and batch their writes (a group commit): each message is still acknowledged
   * only after its own handler succeeded.
   */
  concurrency?: number;
  /**
   * Subjects this durable read before and no longer does (a narrower set took their place). A broker that keeps
   * positions (JetStream) starts the new subjects' consumers where the retired one had acknowledged up to, then
   * deletes it, so a long-lived server neither keeps delivering the retired subjects nor replays the new ones.
   */
  replaces?: string[];
  /**
   * Looks at a message as published (its JSON value, read only, not decoded): true means the handler would do
   * nothing with it. A bus may then acknowledge it without delivering it (the in-process bus does, before any copy,
   * context or promise; JetStream once the payload is parsed); one that delivers it anyway is no different, so the
   * handler must still cope with it.
   */
  skip?(subject: string, data: unknown): boolean;
}

/**
 * A payload already serialised as JSON (an outbox row read as text): the bus sends the text as it is,
 * instead of the relay parsing the row and the bus encoding it again, once per message.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/** A published payload as the JSON value consumers get (an in-process bus hands over values, not bytes). */
export const payloadValue = (data: unknown): unknown => (data instanceof JsonText ? JSON.parse(data.text) : data);

/** A publish after `close()`: shutdown, not an outage (an outbox keeps the row for the next start). */
export class BusClosed extends Error {
  constructor() {
    super('bus closed');
    this.name = 'BusClosed';
  }
}

export interface Bus {
  /** What carries the messages, as trace spans name it (`messaging.system`): `nats`, `in-process`. */
  readonly system?: string;
  /**
   * `data` is a JSON value, or its text (`JsonText`). `context` travels as headers; consumers' handlers run
   * inside it (lib/request-context.ts).
   */
  publish(subject: string, data: unknown, id: string, context?: MessageContext): Promise<void>;
  /** `durable` names the consumer; its position survives restarts (JetStream) or the process (in-process). */
  subscribe(durable: string, subjects: string[], handler: BusHandler, options?: SubscribeOptions): Promise<void>;
  /**
   * Every process that watches gets every message published from now on, at most once (no durable
   * position, no redelivery): for dropping cached state, where a missed message only waits for the cache's TTL.
   */
  watch(subjects: string[], handler: (message: Pick<BusMessage, 'subject' | 'data'>) => void): void;
  /** Whether publishing can succeed now (broker connected and streams in place); for readiness. */
  connected(): boolean;
  /**
   * Called with a stream's subjects when the broker lost that stream and it was created again: its
   * unconsumed messages are gone, so publishers send their recently published outbox rows again.
   */
  onStreamRecreated?(listener: (subjects: string[]) => void): void;
  /**
   * Stops (`paused`) or restarts the broker's delivery of a durable's subjects. While paused, what is published on
   * them is passed over for good, never delivered later: only for a consumer that knows none of it would do
   * anything, and that orders each pause against whatever would change that (a restart is always safe: it
   * delivers what is published from then on). A durable not made yet is left alone, and one made again starts
   * delivering. Optional: a bus without it delivers everything (an in-process skip is already cheap).
   */
  pauseDeliveries?(durable: string, subjects: string[], paused: boolean): Promise<void>;
  close(): Promise<void>;
}

/** JetStream streams and the subjects each holds (relative to the prefix). */
export const STREAMS = [
  { name: 'CONTACTS', subjects: ['contacts.>'] },
  { name: 'EVENTS', subjects: ['events.>'] },
  { name: 'EMAILS', subjects: ['emails.>'] },
  { name: 'DELIVERIES', subjects: ['deliveries.>'] },
  { name: 'IDENTITY', subjects: ['identity.>'] },
  { name: 'SEGMENTS', subjects: ['segments.>'] },
] as const;

/** NATS-style subject match: `*` one token, `>` the rest. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

export function streamOf(subject: string): string {
  const stream = STREAMS.find((st) => st.subjects.some((p) => subjectMatches(p, subject)));
  if (!stream) throw new Error(`no stream holds subject ${subject}`);
  return stream.name;
}
