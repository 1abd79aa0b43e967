import { createInbox, ErrorCode, headers, NatsError, type Msg, type MsgHdrs, type NatsConnection } from 'nats';

/** As nats.js's JetStream client: a publish without an acknowledgement this long fails with a timeout. */
const ACK_TIMEOUT_MS = 5000;
const SWEEP_EVERY_MS = 250;

interface Pending {
  resolve(): void;
  reject(err: Error): void;
  deadline: number;
}

/**
 * JetStream publishes acknowledged on one inbox subscription of our own, what `js.publish` does for one message.
 * nats.js 2.29 builds a `NatsError(Cancelled)` with its stack after every request it has already resolved
 * (`RequestOne.resolver` calls `cancel()`), plus a timer and a `Promise.race` per publish; the outbox relay
 * publishes about two messages per tracked event, so that was a visible part of a service's CPU.
 * Here: one wildcard subscription, a counter as reply token, one timer sweeping the timeouts.
 */
export class JetStreamPublisher {
  private readonly inbox: string;
  private readonly pending = new Map<string, Pending>();
  private next = 0;
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly nc: NatsConnection,
    private readonly ackTimeoutMs = ACK_TIMEOUT_MS,
  ) {
    this.inbox = `${createInbox()}.`;
    // Restored by nats.js on every reconnect, like its own request inbox.
    nc.subscribe(`${this.inbox}*`, { callback: (_err, m) => this.answer(m) });
  }

  /** Resolves once the stream has stored the message (or found it a duplicate of `msgId`). */
  publish(subject: string, payload: Uint8Array, msgId: string, extra?: MsgHdrs): Promise<void> {
    const h = extra ?? headers();
    h.set('Nats-Msg-Id', msgId);
    const token = (this.next++).toString(36);
    return new Promise<void>((resolve, reject) => {
      try {
        this.nc.publish(subject, payload, { reply: this.inbox + token, headers: h });
      } catch (err) {
        reject(err as Error);
        return;
      }
      this.pending.set(token, { resolve, reject, deadline: Date.now() + this.ackTimeoutMs });
      this.sweeper ??= setInterval(() => this.sweep(), Math.min(SWEEP_EVERY_MS, this.ackTimeoutMs)).unref();
    });
  }

  /** Fails every publish still waiting (the connection is closing: no answer will come). */
  close(): void {
    for (const [token, p] of this.pending) {
      this.pending.delete(token);
      p.reject(NatsError.errorForCode(ErrorCode.ConnectionClosed));
    }
    this.stopSweeping();
  }

  private answer(m: Msg): void {
    const token = m.subject.slice(this.inbox.length);
    const p = this.pending.get(token);
    if (!p) return; // answered after its timeout
    this.pending.delete(token);
    if (this.pending.size === 0) this.stopSweeping();
    const err = ackError(m);
    if (err) p.reject(err);
    else p.resolve();
  }

  /** Deadlines grow with the insertion order of the map: stop at the first one not yet reached. */
  private sweep(): void {
    const now = Date.now();
    for (const [token, p] of this.pending) {
      if (p.deadline > now) break;
      this.pending.delete(token);
      p.reject(NatsError.errorForCode(ErrorCode.Timeout));
    }
    if (this.pending.size === 0) this.stopSweeping();
  }

  private stopSweeping(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

/**
 * The errors `js.publish` throws, with the same codes: no stream takes the subject (no responders, 503),
 * the stream refused the message (`{error}`, with `api_error`), or an answer without a stream.
 */
function ackError(m: Msg): NatsError | undefined {
  if (m.data.length === 0 && m.headers?.code === 503) return NatsError.errorForCode(ErrorCode.NoResponders);
  let ack: { stream?: string; error?: { code: number; err_code?: number; description?: string } };
  try {
    ack = JSON.parse(m.string());
  } catch {
    return NatsError.errorForCode(ErrorCode.BadJson);
  }
  if (ack.error && ack.error.code >= 300) {
    const err = new NatsError(ack.error.description?.toLowerCase() || ErrorCode.Unknown, `${ack.error.code}`);
    err.api_error = ack.error as NatsError['api_error'];
    return err;
  }
  if (!ack.stream) return NatsError.errorForCode(ErrorCode.JetStreamInvalidAck);
  return undefined;
}
