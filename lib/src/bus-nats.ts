import {
  AckPolicy,
  connect,
  DeliverPolicy,
  nanos,
  StorageType,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
} from 'nats';
import type { Logger } from './logger.js';
import { STREAMS, streamOf, type Bus, type BusHandler } from './bus.js';

const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/** JetStream bus: file-backed streams, `Nats-Msg-Id` dedupe, durable explicit-ack consumers. */
export class NatsBus implements Bus {
  private readonly consumers: ConsumerMessages[] = [];
  private readonly loops: Promise<void>[] = [];

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {}

  static async connect(url: string, prefix: string, name: string, logger: Logger): Promise<NatsBus> {
    // noAsyncTraces: no Error (with its stack) built per JetStream publish, a large cost of the relay.
    const nc = await connect({ servers: url.split(','), name, maxReconnectAttempts: -1, noAsyncTraces: true });
    const jsm = await nc.jetstreamManager();
    const bus = new NatsBus(nc, nc.jetstream(), jsm, prefix, logger);
    await bus.ensureStreams();
    return bus;
  }

  streamName(stream: string): string {
    return `${this.prefix}_${stream}`;
  }

  private async ensureStreams(): Promise<void> {
    for (const s of STREAMS) {
      const config = {
        name: this.streamName(s.name),
        subjects: s.subjects.map((p) => `${this.prefix}.${p}`),
        storage: StorageType.File,
        duplicate_window: nanos(DUPLICATE_WINDOW_MS),
      };
      try {
        await this.jsm.streams.info(config.name);
      } catch {
        await this.jsm.streams.add(config).catch(async (err: Error) => {
          // Another service may have created it in the meantime.
          if (!/already in use/i.test(err.message)) throw err;
        });
      }
    }
  }

  async publish(subject: string, data: unknown, id: string): Promise<void> {
    await this.js.publish(`${this.prefix}.${subject}`, Buffer.from(JSON.stringify(data)), { msgID: id });
  }

  /** One durable consumer per subject (single `filter_subject` works on every JetStream server version). */
  async subscribe(durable: string, subjects: string[], handler: BusHandler): Promise<void> {
    for (const subject of subjects) {
      const name = this.streamName(streamOf(subject.replace(/\.[*>]$/, '.x')));
      const durableName = `${durable}_${subject}`.replace(/[^A-Za-z0-9_-]/g, '_');
      await this.jsm.consumers.add(name, {
        durable_name: durableName,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: `${this.prefix}.${subject}`,
        ack_wait: nanos(30_000),
        max_deliver: -1,
      });
      const consumer = await this.js.consumers.get(name, durableName);
      const messages = await consumer.consume({ max_messages: 256 });
      this.consumers.push(messages);
      this.loops.push(this.run(messages, handler, durableName));
    }
  }

  private async run(messages: ConsumerMessages, handler: BusHandler, durable: string): Promise<void> {
    const prefixLength = this.prefix.length + 1;
    for await (const m of messages) {
      const subject = m.subject.slice(prefixLength);
      try {
        await handler({ id: m.headers?.get('Nats-Msg-Id') || `${m.info.stream}-${m.seq}`, subject, data: JSON.parse(m.string()) });
        m.ack();
      } catch (err) {
        this.logger.warn({ err, durable, subject }, 'bus handler failed; redelivering');
        m.nak(Math.min(1000 * m.info.redeliveryCount, 30_000));
      }
    }
  }

  connected(): boolean {
    return !this.nc.isClosed();
  }

  async close(): Promise<void> {
    for (const c of this.consumers) c.stop();
    await Promise.allSettled(this.loops);
    await this.nc.drain().catch(() => undefined);
  }
}
