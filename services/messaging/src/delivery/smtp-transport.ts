import type { ConnectionOptions } from 'node:tls';
import type { BuiltMessage } from './mime-build.js';
export type { MailMessage } from './mime-build.js';
import { SmtpSession, type SmtpError, type SmtpSessionOptions } from './smtp-session.js';

export interface MailTransport {
  /**
   * Sends MIME bytes built (and DKIM-signed) elsewhere, unchanged, to the envelope's recipients; answers the
   * server's reply to the message (`250 ...`, shown as the attempt's SMTP answer by GET /emails/{id}).
   */
  sendRaw(message: BuiltMessage): Promise<string>;
  close(): void;
}

/** Commands after which nothing of the message reached the server: a reused connection's failure there is retried. */
const BEFORE_MESSAGE = new Set(['API', 'CONN', 'MAIL FROM']);

/**
 * Pooled SMTP connections to SMTP_URL (`smtp://user:pass@host:port`, `smtps://` for implicit TLS).
 * `?tls=insecure` accepts a self-signed relay certificate and `?tls=off` never upgrades with STARTTLS
 * (loopback sinks). The bytes go over SmtpSession as they are (pipelined envelope when the server offers
 * PIPELINING): no mail composer per message, no stream per message.
 */
export function createSmtpTransport(url: string, poolSize: number): MailTransport {
  const u = new URL(url);
  const tls = u.searchParams.get('tls');
  const options: SmtpSessionOptions = {
    host: u.hostname,
    ...(u.port ? { port: Number(u.port) } : {}),
    secure: u.protocol === 'smtps:',
    ...(tls === 'off' ? { ignoreTLS: true } : {}),
    ...(tls === 'insecure' ? { tls: { rejectUnauthorized: false } satisfies ConnectionOptions } : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
  };
  const auth = u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : undefined;
  return new SmtpPool(options, auth, poolSize);
}

interface Pooled {
  conn: SmtpSession;
  /** Messages sent over it: a failure before the message on a reused connection may be a server's idle close. */
  sent: number;
  /** Messages given to it and not yet answered: the one in flight and those queued behind it (pipelined). */
  busy: number;
  dead: boolean;
}

/**
 * Messages one connection that pipelines takes at once: the one in flight and two queued behind it, so the one
 * writing its body finds the next envelope waiting (one write and one read per message instead of two).
 */
const PIPELINE_DEPTH = 3;

/** While every connection is busy, a message queues behind those in flight on a connection that pipelines. */
class SmtpPool implements MailTransport {
  private readonly idle: Pooled[] = [];
  /** Busy connections that can take another message behind theirs. */
  private readonly roomy = new Set<Pooled>();
  private readonly waiting: Array<{ resolve(c: Pooled): void; reject(err: unknown): void }> = [];
  private open = 0;
  private closed = false;

  constructor(
    private readonly options: SmtpSessionOptions,
    private readonly auth: { user: string; pass: string } | undefined,
    private readonly size: number,
  ) {}

  async sendRaw({ raw, envelope, ready }: BuiltMessage): Promise<string> {
    for (;;) {
      const c = await this.acquire();
      try {
        const response = await c.conn.send(envelope, raw, ready);
        c.sent++;
        this.release(c);
        return response.slice(0, 500);
      } catch (e) {
        const err = e as SmtpError;
        const reused = c.sent > 0;
        if ((err.code === 'EENVELOPE' || err.code === 'EMESSAGE') && err.responseCode !== 421 && !c.dead) {
          // The server refused this message; the session itself is fine (reset by the session after an envelope).
          this.release(c);
          throw err;
        }
        this.discard(c);
        if (!(reused && !err.responseCode && BEFORE_MESSAGE.has(err.command ?? ''))) throw err;
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error('SMTP transport closed'));
    for (const c of this.idle.splice(0)) c.conn.quit();
  }

  private acquire(): Promise<Pooled> {
    if (this.closed) return Promise.reject(new Error('SMTP transport closed'));
    const c = this.idle.pop() ?? (this.open < this.size ? undefined : this.roomy.values().next().value);
    if (c) return Promise.resolve(this.take(c));
    if (this.open < this.size) return this.connect().then((opened) => this.take(opened));
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** Whether `c` takes one more message (a second or third behind the first when it pipelines). */
  private hasRoom(c: Pooled): boolean {
    return c.busy === 0 || (c.busy < PIPELINE_DEPTH && c.conn.pipelines);
  }

  /** Gives `c` one more message. */
  private take(c: Pooled): Pooled {
    c.busy++;
    if (this.hasRoom(c)) this.roomy.add(c);
    else this.roomy.delete(c);
    return c;
  }

  private release(c: Pooled): void {
    c.busy--;
    this.roomy.delete(c);
    if (c.dead) return;
    while (this.waiting.length && this.hasRoom(c)) this.waiting.shift()!.resolve(this.take(c));
    if (c.busy > 0) {
      if (this.hasRoom(c)) this.roomy.add(c);
      return;
    }
    if (this.closed) c.conn.quit();
    else this.idle.push(c);
  }

  /** Closes a connection that failed (once); a sender waiting for one gets a new connection. */
  private discard(c: Pooled): void {
    if (c.dead) return;
    c.dead = true;
    this.roomy.delete(c);
    this.open--;
    const at = this.idle.indexOf(c);
    if (at >= 0) this.idle.splice(at, 1);
    c.conn.close();
    const next = this.waiting.shift();
    if (next) this.connect().then((opened) => next.resolve(this.take(opened)), next.reject);
  }

  private connect(): Promise<Pooled> {
    this.open++;
    return SmtpSession.connect(this.options, this.auth).then(
      (conn) => {
        const c: Pooled = { conn, sent: 0, busy: 0, dead: false };
        // An idle connection the server closes (or that fails) leaves the pool; a busy one fails its send too.
        conn.onClose = () => this.discard(c);
        return c;
      },
      (err: unknown) => {
        this.open--;
        const next = this.waiting.shift();
        if (next) this.connect().then((opened) => next.resolve(this.take(opened)), next.reject);
        throw err;
      },
    );
  }
}
