import {
  AckPolicy,
  connect,
  DeliverPolicy,
  headers,
  nanos,
  StorageType,
  type ConsumerMessages,
  type JsMsg,
  type JetStreamClient,
  type JetStreamManager,
  type MsgHdrs,
  type NatsConnection,
} from 'nats';
import type { Logger } from './logger.js';
import {
  BusClosed,
  JsonText,
  STREAMS,
  streamOf,
  type Bus,
  type BusHandler,
  type BusMessage,
  type MessageContext,
  type SubscribeOptions,
} from './bus.js';
import { JetStreamPublisher } from './jetstream-publish.js';
import { messageContext, runInContext } from './request-context.js';

const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;
const MAX_BACKOFF_MS = 5000;
/** Message headers of the request that wrote a message, beside Nats-Msg-Id (read back with the same spelling). */
const REQUEST_ID_HEADER = 'X-Request-Id';
const TRACEPARENT_HEADER = 'traceparent';

/** The request's headers when the message has them (the publisher adds the dedupe id). */
function requestHeaders(context?: MessageContext): MsgHdrs | undefined {
  if (!context?.requestId && !context?.traceparent) return undefined;
  const h = headers();
  if (context.requestId) h.set(REQUEST_ID_HEADER, context.requestId);
  if (context.traceparent) h.set(TRACEPARENT_HEADER, context.traceparent);
  return h;
}

interface Registration {
  durable: string;
  subject: string;
  stream: string;
  handler: BusHandler;
  /** Messages handled at once (SubscribeOptions). */
  concurrency: number;
  /** SubscribeOptions.skip: such a message is acknowledged without running the handler. */
  skip?: SubscribeOptions['skip'];
  messages?: ConsumerMessages;
  /** Retires the durables this one's group replaces (SubscribeOptions.replaces) before it consumes. */
  migration?: () => Promise<void>;
}

/**
 * A stream made again right after its deletion can be left unable to store: the server's removal of the old
 * stream's files runs into the new one of the same name, and every publish then fails with "error opening msg
 * block file ...: no such file or directory" until the stream is deleted and made once more (seen with
 * nats-server 2.9 under load).
 */
export function isLostStoreFile(err: unknown): boolean {
  return /msg block file|no such file or directory/i.test((err as Error)?.message ?? '');
}
/** How long after this bus saw a stream (re)created a store error is taken for that race. */
const REMAKE_WINDOW_MS = 60_000;

/** The broker answered that a stream (or the consumer's stream) does not exist: 404/10059, or nobody listens (503). */
function isMissingStream(err: unknown): boolean {
  const e = err as { code?: string; message?: string; api_error?: { err_code?: number } };
  if (e?.code === '503' || e?.api_error?.err_code === 10059) return true;
  return /stream not found|no responders/i.test(e?.message ?? '');
}

/** The broker answered that the consumer does not exist (404/10014). */
function isMissingConsumer(err: unknown): boolean {
  const e = err as { message?: string; api_error?: { err_code?: number } };
  return e?.api_error?.err_code === 10014 || /consumer not found/i.test(e?.message ?? '');
}

/** The last token of a paused durable's filter (pauseDeliveries): no topic is named so. */
const PAUSED_TOKEN = '__paused__';

/** A durable's name on the broker: one per subject a consumer group reads. */
const durableName = (durable: string, subject: string) => `${durable}_${subject}`.replace(/[^A-Za-z0-9_-]/g, '_');

/**
 * JetStream bus: file-backed streams, `Nats-Msg-Id` dedupe, durable explicit-ack consumers.
 * It never blocks its creator: it connects in the background and keeps retrying, publish()
 * fails fast until streams are in place (the outbox keeps the rows), and subscribe() only
 * registers. Streams and consumers found missing (a wiped store, a deleted stream) are
 * created again, and listeners of onStreamRecreated() refill them from their outboxes.
 */
export class NatsBus implements Bus {
  readonly system = 'nats';
  private nc?: NatsConnection;
  private js?: JetStreamClient;
  private publisher?: JetStreamPublisher;
  private jsm?: JetStreamManager;
  private streamsReady = false;
  private closed = false;
  private readonly registrations: Registration[] = [];
  private readonly loops: Promise<void>[] = [];
  /** Creation time of each stream as last seen: a different one means it was lost and made again. */
  private readonly created = new Map<string, string>();
  private readonly recreatedListeners: Array<(subjects: string[]) => void> = [];
  /** When this bus last saw each stream (re)created (ms), and its one remake in progress (isLostStoreFile). */
  private readonly madeAt = new Map<string, number>();
  private readonly remaking = new Map<string, Promise<void>>();
  private readonly wakers = new Set<() => void>();
  private acks: JsMsg[] = [];
  private readonly watchers: Array<{ subjects: string[]; handler: Parameters<Bus['watch']>[1] }> = [];
  private repairing?: Promise<void>;
  private ensuring?: Promise<void>;
  private ensureAgain = false;
  private readonly connecting: Promise<void>;

  private constructor(
    private readonly servers: string[],
    private readonly prefix: string,
    private readonly name: string,
    private readonly logger: Logger,
  ) {
    this.connecting = this.connectLoop();
  }

  /** Returns at once; the connection, streams and consumers follow in the background. */
  static start(url: string, prefix: string, name: string, logger: Logger): NatsBus {
    return new NatsBus(url.split(','), prefix, name, logger.child({ part: 'nats' }));
  }

  streamName(stream: string): string {
    return `${this.prefix}_${stream}`;
  }

  connected(): boolean {
    return this.streamsReady && !!this.nc && !this.nc.isClosed();
  }

  onStreamRecreated(listener: (subjects: string[]) => void): void {
    this.recreatedListeners.push(listener);
  }

  async publish(subject: string, data: unknown, id: string, context?: MessageContext): Promise<void> {
    if (this.closed) throw new BusClosed();
    const publisher = this.publisher;
    if (!publisher || !this.connected()) {
      // Connected but streams not ready: make sure a repair loop runs (a deletion seen as a loop ended).
      if (this.js && this.nc && !this.nc.isClosed()) void this.keepEnsuring();
      throw new Error('message bus unavailable: NATS not connected or streams not ready');
    }
    const full = `${this.prefix}.${subject}`;
    const payload = Buffer.from(data instanceof JsonText ? data.text : JSON.stringify(data));
    try {
      await publisher.publish(full, payload, id, requestHeaders(context));
    } catch (err) {
      // Closed while waiting for the acknowledgement: the row stays in the outbox for the next start.
      if (this.closed) throw new BusClosed();
      if (isLostStoreFile(err) && (await this.remakeFreshStream(subject))) {
        await publisher.publish(full, payload, id, requestHeaders(context));
        return;
      }
      if (!isMissingStream(err)) throw err;
      await this.repair();
      await publisher.publish(full, payload, id, requestHeaders(context));
    }
  }

  /** Core NATS subscriptions: a JetStream publish reaches them too, in every process. */
  watch(subjects: string[], handler: Parameters<Bus['watch']>[1]): void {
    const w = { subjects, handler };
    this.watchers.push(w);
    if (this.nc) this.attachWatcher(this.nc, w);
  }

  private attachWatcher(nc: NatsConnection, w: (typeof this.watchers)[number]): void {
    const prefixLength = this.prefix.length + 1;
    for (const subject of w.subjects) {
      nc.subscribe(`${this.prefix}.${subject}`, {
        callback: (err, m) => {
          if (err) return;
          const data = parseOrUndefined(m.string());
          if (data === undefined) return;
          try {
            w.handler({ subject: m.subject.slice(prefixLength), data });
          } catch (e) {
            this.logger.warn({ err: e, subject }, 'bus watcher failed');
          }
        },
      });
    }
  }

  /** One durable consumer per subject (single `filter_subject` works on every JetStream server version). */
  async subscribe(durable: string, subjects: string[], handler: BusHandler, options?: SubscribeOptions): Promise<void> {
    const regs = subjects.map(
      (subject): Registration => ({
        durable: durableName(durable, subject),
        subject,
        stream: this.streamName(streamOf(subject.replace(/\.[*>]$/, '.x'))),
        handler,
        concurrency: Math.max(1, options?.concurrency ?? 1),
        skip: options?.skip,
      }),
    );
    const retired = (options?.replaces ?? []).filter((subject) => !subjects.includes(subject));
    if (retired.length) {
      // One pass for the group, shared by its loops; a failed pass (broker gone) is tried again by the next loop.
      let pass: Promise<void> | undefined;
      const migration = () =>
        (pass ??= this.retire(durable, retired, regs).catch((err) => {
          pass = undefined;
          throw err;
        }));
      for (const reg of regs) reg.migration = migration;
    }
    for (const reg of regs) {
      this.registrations.push(reg);
      this.loops.push(this.consumeForever(reg));
    }
  }

  /**
   * Bus.pauseDeliveries: the durable's filter moves to a subject of its stream that nothing is published on, so the
   * server passes the stream's messages by without sending them (its position moves on, nothing is pending), and
   * back. nats-server 2.9 has no consumer pause; a filter may change since 2.8.5. The consumer loop's add of a
   * durable it (re)makes always sets the real filter: only this call pauses.
   */
  async pauseDeliveries(durable: string, subjects: string[], paused: boolean): Promise<void> {
    const jsm = this.jsm;
    if (!jsm || !this.connected()) throw new Error('message bus unavailable: NATS not connected or streams not ready');
    for (const subject of subjects) {
      const stream = this.streamName(streamOf(subject.replace(/\.[*>]$/, '.x')));
      const name = durableName(durable, subject);
      const filter = paused ? `${this.prefix}.${subject.split('.')[0]}.${PAUSED_TOKEN}` : `${this.prefix}.${subject}`;
      const info = await jsm.consumers.info(stream, name).catch((err) => {
        if (isMissingConsumer(err)) return undefined;
        throw err;
      });
      if (!info || info.config.filter_subject === filter) continue;
      await jsm.consumers.update(stream, name, { filter_subject: filter });
      const event = paused ? 'nats.consumer_paused' : 'nats.consumer_resumed';
      this.logger.info({ event, durable: name }, paused ? 'bus consumer paused' : 'bus consumer resumed');
    }
  }

  /**
   * Replaces the durables of `retired` subjects with `regs`: each new durable not made yet starts after the
   * highest sequence every retired one had acknowledged (a message acknowledged past that floor comes once more:
   * consumers are idempotent), then the retired durables are deleted. Without retired durables on the broker
   * (a new server, or the migration done before), nothing is done and the new ones start from the beginning.
   */
  private async retire(durable: string, retired: string[], regs: Registration[]): Promise<void> {
    const jsm = this.jsm!;
    const old: Array<{ stream: string; durable: string; floor: number }> = [];
    for (const subject of retired) {
      const stream = this.streamName(streamOf(subject.replace(/\.[*>]$/, '.x')));
      const name = durableName(durable, subject);
      const info = await jsm.consumers.info(stream, name).catch((err) => {
        if (isMissingConsumer(err)) return undefined;
        throw err;
      });
      if (info) old.push({ stream, durable: name, floor: info.ack_floor.stream_seq });
    }
    if (!old.length) return;
    for (const reg of regs) {
      const floors = old.filter((o) => o.stream === reg.stream).map((o) => o.floor);
      if (!floors.length) continue;
      const exists = await jsm.consumers.info(reg.stream, reg.durable).then(
        () => true,
        (err) => {
          if (isMissingConsumer(err)) return false;
          throw err;
        },
      );
      if (!exists) await this.addConsumer(reg, Math.min(...floors) + 1);
    }
    for (const o of old) {
      await jsm.consumers.delete(o.stream, o.durable).catch((err) => {
        if (!isMissingConsumer(err)) throw err;
      });
      this.logger.info({ event: 'nats.consumer_retired', durable: o.durable }, 'bus consumer replaced and deleted');
    }
  }

  /**
   * Consumer lag for metrics: per durable, messages not yet delivered (`pending`) and delivered but
   * not acknowledged (`ackPending`). Durables the server does not answer for are left out.
   */
  async consumerLag(): Promise<Array<{ durable: string; pending: number; ackPending: number }>> {
    const jsm = this.jsm;
    if (!jsm || !this.connected()) return [];
    const infos = await Promise.allSettled(this.registrations.map((r) => jsm.consumers.info(r.stream, r.durable)));
    return infos.flatMap((i, n) =>
      i.status === 'fulfilled'
        ? [
            {
              durable: this.registrations[n].durable,
              pending: i.value.num_pending,
              ackPending: i.value.num_ack_pending,
            },
          ]
        : [],
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.wakers) wake();
    for (const r of this.registrations) r.messages?.stop();
    await Promise.allSettled([...this.loops, this.connecting]);
    const nc = this.nc;
    if (!nc || nc.isClosed()) return;
    // A drain waits for the server; while it is unreachable, shutdown must not.
    await Promise.race([nc.drain().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
    await nc.close().catch(() => undefined);
    this.publisher?.close();
  }

  /** First connection, retried until it works; afterwards nats.js reconnects by itself, forever. */
  private async connectLoop(): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        // noAsyncTraces: no Error (with its stack) built per JetStream publish, a large cost of the relay.
        const nc = await connect({
          servers: this.servers,
          name: this.name,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 1000,
          timeout: 5000,
          noAsyncTraces: true,
        });
        if (this.closed) return void (await nc.close());
        this.nc = nc;
        for (const w of this.watchers) this.attachWatcher(nc, w);
        this.js = nc.jetstream();
        this.publisher = new JetStreamPublisher(nc);
        this.jsm = await nc.jetstreamManager({ checkAPI: false });
        this.logger.info({ event: 'nats.connected', server: nc.getServer() }, 'NATS connected');
        void this.watchStatus(nc);
        this.watchAdvisories(nc);
        await this.keepEnsuring();
        return;
      } catch (err) {
        if (attempt === 0) {
          this.logger.warn({ event: 'nats.unreachable', err }, 'NATS unreachable; retrying in the background');
        }
        await this.pause(Math.min(250 * 2 ** attempt, MAX_BACKOFF_MS));
      }
    }
  }

  /** One log line per connection state change; streams are checked again after each reconnect. */
  private async watchStatus(nc: NatsConnection): Promise<void> {
    let reconnecting = false;
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        this.streamsReady = false;
        reconnecting = false;
        this.logger.warn({ event: 'nats.disconnected', server: s.data }, 'NATS disconnected');
      } else if (s.type === 'reconnecting' && !reconnecting) {
        reconnecting = true;
        this.logger.info({ event: 'nats.reconnecting' }, 'NATS reconnecting');
      } else if (s.type === 'reconnect') {
        this.logger.info({ event: 'nats.reconnected', server: s.data }, 'NATS reconnected');
        void this.keepEnsuring();
      } else if (s.type === 'ldm') {
        this.logger.warn({ event: 'nats.lame_duck', server: s.data }, 'NATS server entering lame duck mode');
      } else if (s.type === 'error') {
        this.logger.warn({ event: 'nats.error', err: s.data }, 'NATS error');
      }
    }
  }

  /** JetStream announces stream deletion and creation: repair at once, and notice a stream made by another process. */
  private watchAdvisories(nc: NatsConnection): void {
    const ours = new Set(STREAMS.map((s) => this.streamName(s.name)));
    nc.subscribe('$JS.EVENT.ADVISORY.STREAM.*.*', {
      callback: (_err, msg) => {
        const [, , , , action, stream] = msg.subject.split('.');
        if (!ours.has(stream) || (action !== 'DELETED' && action !== 'CREATED')) return;
        if (action === 'DELETED') {
          this.streamsReady = false;
          this.logger.warn({ event: 'nats.stream_deleted', stream }, 'JetStream stream deleted');
          this.restartConsumers(stream);
        }
        void this.keepEnsuring();
      },
    });
  }

  /** Repairs until the streams are in place (or the bus closes); concurrent callers share one loop. */
  private keepEnsuring(): Promise<void> {
    // A call during a pass may report a stream that pass already checked: it asks for one more.
    this.ensureAgain = true;
    this.ensuring ??= (async () => {
      for (let delay = 250; !this.closed; delay = Math.min(delay * 2, MAX_BACKOFF_MS)) {
        try {
          while (this.ensureAgain && !this.closed) {
            this.ensureAgain = false;
            await this.repair();
          }
          return;
        } catch (err) {
          this.ensureAgain = true;
          if (delay === 250) {
            this.logger.warn({ event: 'nats.streams_unavailable', err }, 'JetStream streams not ready; retrying');
          }
          await this.pause(delay);
        }
      }
    })().finally(() => {
      this.ensuring = undefined;
      // A stream reported between the loop's last pass and here still gets its pass.
      if (this.ensureAgain && !this.closed) void this.keepEnsuring();
    });
    return this.ensuring;
  }

  /**
   * isLostStoreFile on a stream this bus saw made less than REMAKE_WINDOW_MS ago: deletes it and makes it again
   * (listeners refill it from their outboxes, as after any re-creation). Concurrent failed publishes share one
   * remake. False, and nothing done, for an older stream: its messages are not this bus's to drop.
   */
  private async remakeFreshStream(subject: string): Promise<boolean> {
    const s = STREAMS.find((st) => st.name === streamOf(subject))!;
    const name = this.streamName(s.name);
    const pending = this.remaking.get(name);
    if (pending) return pending.then(() => true);
    if (Date.now() - (this.madeAt.get(name) ?? 0) > REMAKE_WINDOW_MS) return false;
    const remake = (async () => {
      this.logger.warn({ event: 'nats.stream_remade', stream: name }, 'JetStream stream lost its files: made again');
      await this.jsm!.streams.delete(name).catch((err) => {
        if (!isMissingStream(err)) throw err;
      });
      await this.ensureStream(s);
    })().finally(() => this.remaking.delete(name));
    this.remaking.set(name, remake);
    await remake;
    return true;
  }

  /** One pass over every stream; concurrent callers (a batch of failed publishes) share it. */
  private repair(): Promise<void> {
    this.repairing ??= (async () => {
      for (const s of STREAMS) await this.ensureStream(s);
      this.streamsReady = true;
      for (const wake of this.wakers) wake();
    })().finally(() => (this.repairing = undefined));
    return this.repairing;
  }

  private async ensureStream(s: (typeof STREAMS)[number]): Promise<void> {
    const jsm = this.jsm!;
    const name = this.streamName(s.name);
    let info: Awaited<ReturnType<typeof jsm.streams.info>>;
    let made = false;
    try {
      info = await jsm.streams.info(name);
    } catch (err) {
      if (!isMissingStream(err)) throw err;
      try {
        info = await jsm.streams.add({
          name,
          subjects: s.subjects.map((p) => `${this.prefix}.${p}`),
          storage: StorageType.File,
          duplicate_window: nanos(DUPLICATE_WINDOW_MS),
        });
        made = true;
      } catch (e) {
        // Another service may have created it in the meantime.
        if (!/already in use/i.test((e as Error).message)) throw e;
        info = await jsm.streams.info(name);
      }
    }
    const known = this.created.get(name);
    this.created.set(name, info.created);
    if (!made && (known === undefined || known === info.created)) return;
    this.madeAt.set(name, Date.now());
    const event = known ? 'nats.stream_recreated' : 'nats.stream_created';
    this.logger.warn({ event, stream: name }, 'JetStream stream created');
    this.restartConsumers(name);
    for (const listener of this.recreatedListeners) listener([...s.subjects]);
  }

  /** Keeps one registration consuming: (re)creates its durable consumer and restarts a loop that ends, with backoff. */
  private async consumeForever(reg: Registration): Promise<void> {
    let delay = 250;
    while (!this.closed) {
      await this.untilReady();
      if (this.closed) return;
      const since = Date.now();
      try {
        await this.ensureConsumer(reg);
        const consumer = await this.js!.consumers.get(reg.stream, reg.durable);
        // abort_on_missing_resource: a deleted stream or consumer ends the iterator with an error,
        // so it is re-created here rather than waited for.
        // expires 10 s (heartbeats every 5 s): a consumer lost without a word is noticed within seconds.
        reg.messages = await consumer.consume({ max_messages: 256, expires: 10_000, abort_on_missing_resource: true });
        if (this.closed) reg.messages.stop(); // close() came while this one was being set up
        await this.run(reg.messages, reg);
        if (this.closed) return;
        this.logger.warn({ event: 'nats.consumer_ended', durable: reg.durable }, 'bus consumer ended; restarting');
      } catch (err) {
        if (this.closed) return;
        const event = 'nats.consumer_failed';
        this.logger.warn({ event, durable: reg.durable, err }, 'bus consumer failed; restarting');
        if (isMissingStream(err)) void this.keepEnsuring();
      }
      delay = Date.now() - since > 30_000 ? 250 : Math.min(delay * 2, MAX_BACKOFF_MS);
      await this.pause(delay);
    }
  }

  /**
   * A consumer re-added while its stream was being deleted sits on the dead stream and would only
   * notice after missed heartbeats: consumers of a lost or re-created stream start over at once.
   */
  private restartConsumers(stream: string): void {
    for (const reg of this.registrations) if (reg.stream === stream) reg.messages?.stop();
  }

  private async ensureConsumer(reg: Registration): Promise<void> {
    await reg.migration?.();
    try {
      await this.addConsumer(reg);
    } catch (err) {
      // A durable a migration made (retire()) starts at a sequence, and a deliver policy cannot change: keep it.
      const made = await this.jsm!.consumers.info(reg.stream, reg.durable).catch(() => undefined);
      const start = made?.config.deliver_policy === DeliverPolicy.StartSequence ? made.config.opt_start_seq : undefined;
      if (start === undefined) throw err;
      await this.addConsumer(reg, start);
    }
  }

  /** Adds (or confirms) the durable: from the stream's first message, or from `startSeq`. */
  private async addConsumer(reg: Registration, startSeq?: number): Promise<void> {
    await this.jsm!.consumers.add(reg.stream, {
      durable_name: reg.durable,
      ack_policy: AckPolicy.Explicit,
      ...(startSeq === undefined
        ? { deliver_policy: DeliverPolicy.All }
        : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSeq }),
      filter_subject: `${this.prefix}.${reg.subject}`,
      ack_wait: nanos(30_000),
      max_deliver: -1,
    });
  }

  /**
   * Handles the messages one at a time, or up to `reg.concurrency` at once (each acked when its handler is done).
   * A count and one waiter, not a `Promise.race` over the messages in flight: a race per message subscribes to
   * every one of them again, hundreds of reactions per message at a campaign's pace.
   */
  private async run(messages: ConsumerMessages, reg: Registration): Promise<void> {
    if (reg.concurrency === 1) {
      for await (const m of messages) await this.handle(m, reg);
      return;
    }
    let inFlight = 0;
    let freed: (() => void) | undefined;
    const release = () => {
      inFlight--;
      freed?.();
      freed = undefined;
    };
    const slotFreed = () => new Promise<void>((resolve) => (freed = resolve));
    for await (const m of messages) {
      inFlight++;
      this.handle(m, reg).then(release, release);
      if (inFlight >= reg.concurrency) await slotFreed();
    }
    while (inFlight > 0) await slotFreed();
  }

  private async handle(m: JsMsg, reg: Registration): Promise<void> {
    const subject = m.subject.slice(this.prefix.length + 1);
    const data = parseOrUndefined(m.string());
    // Nothing for the handler to do (most of segments' and workflows' email deliveries): acknowledged before any
    // context, id, trace span or promise is made for it.
    if (data !== undefined && skips(reg, subject, data)) return this.ackSoon(m);
    // The handler, its log lines and the outbox rows it writes belong to the request that wrote the message.
    const requestId = m.headers?.get(REQUEST_ID_HEADER) || undefined;
    const traceparent = m.headers?.get(TRACEPARENT_HEADER) || undefined;
    await runInContext(messageContext({ requestId, traceparent }), async () => {
      try {
        const id = m.headers?.get('Nats-Msg-Id') || `${m.info.stream}-${m.seq}`;
        if (data === undefined) {
          // Not JSON: no redelivery can fix it (lib/bus-topic.ts treats undecodable payloads alike).
          const fields = { event: 'bus.malformed', durable: reg.durable, subject, id };
          this.logger.error(fields, 'bus message is not JSON; skipped');
          m.term();
          return;
        }
        const message: BusMessage = { id, subject, data, requestId, traceparent };
        await reg.handler(message);
        this.ackSoon(m);
        this.logger.debug({ durable: reg.durable, subject, messageId: message.id }, 'bus message handled');
      } catch (err) {
        this.logger.warn({ err, durable: reg.durable, subject }, 'bus handler failed; redelivering');
        m.nak(Math.min(1000 * m.info.redeliveryCount, 30_000));
      }
    });
  }

  /**
   * Acknowledgements go out together once the messages at hand are handled: nats.js writes to the socket once
   * per microtask turn that published, so acks sent one by one cost a socket write per message.
   */
  private ackSoon(m: JsMsg): void {
    this.acks.push(m);
    if (this.acks.length === 1) setImmediate(() => this.flushAcks());
  }

  private flushAcks(): void {
    const acks = this.acks;
    this.acks = [];
    for (const m of acks) {
      try {
        m.ack();
      } catch {
        // The connection is closing: the message comes again (redelivered after ack_wait or at the next start).
      }
    }
  }

  private untilReady(): Promise<void> {
    return this.connected() || this.closed ? Promise.resolve() : this.pause(60_000).then(() => this.untilReady());
  }

  /** Sleeps, cut short by close() or by the streams becoming ready. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }
}

/** A skip that throws skips nothing: the handler gets the message, as on the in-process bus. */
function skips(reg: Registration, subject: string, data: unknown): boolean {
  try {
    return reg.skip?.(subject, data) === true;
  } catch {
    return false;
  }
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
