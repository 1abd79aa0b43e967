import type { Logger } from './logger.js';
import {
  BusClosed,
  JsonText,
  payloadValue,
  subjectMatches,
  type Bus,
  type BusHandler,
  type BusMessage,
  type MessageContext,
  type SubscribeOptions,
} from './bus.js';
import { messageContext, runInContext } from './request-context.js';

interface Subscription {
  durable: string;
  subjects: string[];
  handler: BusHandler;
  /** SubscribeOptions.skip: a message it answers true for is acknowledged at once, never delivered. */
  skip?: (subject: string, data: unknown) => boolean;
  /** Deliveries to one subscriber run one after another, in publish order (unless `concurrent`). */
  tail: Promise<void>;
  /** SubscribeOptions.concurrency > 1: each message is handled as it is published (the relay bounds how many). */
  concurrent: boolean;
  inFlight: Set<Promise<void>>;
}

type WatchHandler = Parameters<Bus['watch']>[1];

interface Route {
  watchers: WatchHandler[];
  targets: Subscription[];
  /** Some target has a skip. */
  skipping: boolean;
}

const DEDUPE_WINDOW = 10_000;
const MAX_ATTEMPTS = 10;

/**
 * Embedded mode's bus. `publish` resolves once every subscriber has handled the message,
 * so the outbox marks a row published only after delivery; a failing handler is retried
 * with backoff, like a JetStream nak.
 */
const CLOSE_WAIT_MS = 5000;

export class MemoryBus implements Bus {
  readonly system = 'in-process';
  private readonly subs: Subscription[] = [];
  private readonly watchers: Array<{ subjects: string[]; handler: WatchHandler }> = [];
  private readonly seen = new Set<string>();
  /** Who takes a subject, worked out once per subject (every message used to match every pattern). */
  private readonly routes = new Map<string, Route>();
  private closed = false;

  constructor(private readonly logger: Logger) {}

  async publish(subject: string, payload: unknown, id: string, context?: MessageContext): Promise<void> {
    if (this.closed) throw new BusClosed();
    if (this.seen.has(id)) return;
    this.remember(id);
    const data = payloadValue(payload);
    const base = {
      id,
      subject,
      requestId: context?.requestId ?? undefined,
      traceparent: context?.traceparent ?? undefined,
    };
    // Each subscriber and watcher gets its own copy: parsed again from the text when there is one (a
    // quarter of the CPU of structuredClone), the first subscriber taking the value parsed above.
    const fresh = (): unknown => (payload instanceof JsonText ? JSON.parse(payload.text) : structuredClone(data));
    let unused = payload instanceof JsonText;
    const copy = (): unknown => {
      if (!unused) return fresh();
      unused = false;
      return data;
    };
    const route = this.routeOf(subject);
    // Skips look at the value before any watcher or subscriber holds it (the first of them takes it).
    const targets = route.skipping
      ? route.targets.filter((s) => !s.skip || !this.skips(s, subject, data))
      : route.targets;
    for (const handler of route.watchers) this.notify(handler, subject, copy);
    await Promise.all(
      targets.map((s) => {
        const message: BusMessage = { ...base, data: copy() };
        if (s.concurrent) {
          const delivered: Promise<void> = this.deliver(s, message, fresh).finally(() => s.inFlight.delete(delivered));
          s.inFlight.add(delivered);
          return delivered;
        }
        const delivered = s.tail.then(() => this.deliver(s, message, fresh));
        s.tail = delivered;
        return delivered;
      }),
    );
  }

  async subscribe(durable: string, subjects: string[], handler: BusHandler, options?: SubscribeOptions): Promise<void> {
    const concurrent = (options?.concurrency ?? 1) > 1;
    const skip = options?.skip;
    this.subs.push({ durable, subjects, handler, skip, tail: Promise.resolve(), concurrent, inFlight: new Set() });
    this.routes.clear();
  }

  watch(subjects: string[], handler: WatchHandler): void {
    this.watchers.push({ subjects, handler });
    this.routes.clear();
  }

  private routeOf(subject: string): Route {
    let route = this.routes.get(subject);
    if (!route) {
      const matches = (subjects: string[]) => subjects.some((p) => subjectMatches(p, subject));
      const targets = this.subs.filter((s) => matches(s.subjects));
      route = {
        watchers: this.watchers.filter((w) => matches(w.subjects)).map((w) => w.handler),
        targets,
        skipping: targets.some((s) => s.skip),
      };
      // Subjects are a fixed family (topics and their members); the bound only guards against a runaway caller.
      if (this.routes.size >= 10_000) this.routes.clear();
      this.routes.set(subject, route);
    }
    return route;
  }

  /** A skip that throws skips nothing: the delivery goes ahead and the handler sees the message as before. */
  private skips(s: Subscription, subject: string, data: unknown): boolean {
    try {
      return s.skip!(subject, data);
    } catch {
      return false;
    }
  }

  private notify(handler: WatchHandler, subject: string, copy: () => unknown): void {
    try {
      handler({ subject, data: copy() });
    } catch (err) {
      this.logger.warn({ err, subject }, 'bus watcher failed');
    }
  }

  connected(): boolean {
    return true;
  }

  /** Takes no more messages; waits (at most CLOSE_WAIT_MS) for the handlers in flight. */
  async close(): Promise<void> {
    this.closed = true;
    const inFlight = Promise.allSettled(this.subs.flatMap((s) => [s.tail, ...s.inFlight]));
    await Promise.race([inFlight, new Promise((r) => setTimeout(r, CLOSE_WAIT_MS).unref())]);
  }

  /** Like NatsBus: the handler runs inside the context of the request that wrote the message. */
  private deliver(sub: Subscription, message: BusMessage, fresh: () => unknown): Promise<void> {
    return runInContext(messageContext(message), () => this.deliverWithRetries(sub, message, fresh));
  }

  /** `message` is the subscriber's own copy; a retry gets a new one (the failed attempt may have changed it). */
  private async deliverWithRetries(sub: Subscription, message: BusMessage, fresh: () => unknown): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await sub.handler(attempt === 1 ? message : { ...message, data: fresh() });
        this.logger.debug(
          { durable: sub.durable, subject: message.subject, messageId: message.id },
          'bus message handled',
        );
        return;
      } catch (err) {
        if (attempt >= MAX_ATTEMPTS || this.closed) {
          this.logger.error({ err, durable: sub.durable, subject: message.subject }, 'bus handler gave up');
          return;
        }
        await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** attempt, 5000)));
      }
    }
  }

  private remember(id: string): void {
    this.seen.add(id);
    if (this.seen.size > DEDUPE_WINDOW) {
      const oldest = this.seen.values().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }
}
