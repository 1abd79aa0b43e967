import SMTPConnection, {
  type SMTPConnectionAuth,
  type SMTPConnectionOptions,
  type SMTPConnectionSendInfo,
} from 'nodemailer/lib/smtp-connection';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { BuiltMessage } from './mime-build.js';

export type MailMessage = Mail.Options;

export interface MailTransport {
  /**
   * Sends MIME bytes built (and DKIM-signed) elsewhere, unchanged, to the envelope's recipients; answers the
   * server's reply to the message (`250 ...`, shown as the attempt's SMTP answer by GET /emails/{id}).
   */
  sendRaw(message: BuiltMessage): Promise<string>;
  close(): void;
}

type SmtpError = Error & { code?: string; responseCode?: number; command?: string };

/** Commands after which nothing of the message reached the server: a reused connection's failure there is retried. */
const BEFORE_MESSAGE = new Set(['API', 'CONN', 'MAIL FROM']);

/**
 * Pooled SMTP connections to SMTP_URL (`smtp://user:pass@host:port`, `smtps://` for implicit TLS).
 * `?tls=insecure` accepts a self-signed relay certificate and `?tls=off` never upgrades with STARTTLS
 * (loopback sinks). The bytes go over nodemailer's SMTPConnection as they are: no mail composer per
 * message (it would build a MIME tree, boundaries and a Message-ID for bytes that are already signed).
 */
export function createSmtpTransport(url: string, poolSize: number): MailTransport {
  const u = new URL(url);
  const tls = u.searchParams.get('tls');
  const options: SMTPConnectionOptions = {
    host: u.hostname,
    ...(u.port ? { port: Number(u.port) } : {}),
    secure: u.protocol === 'smtps:',
    ...(tls === 'off' ? { ignoreTLS: true } : {}),
    ...(tls === 'insecure' ? { tls: { rejectUnauthorized: false } } : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
  };
  const auth = u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : undefined;
  return new SmtpPool(options, auth, poolSize);
}

interface Pooled {
  conn: SMTPConnection;
  /** Messages sent over it: a failure before the message on a reused connection may be a server's idle close. */
  sent: number;
  dead: boolean;
}

class SmtpPool implements MailTransport {
  private readonly idle: Pooled[] = [];
  private readonly waiting: Array<{ resolve(c: Pooled): void; reject(err: unknown): void }> = [];
  private open = 0;
  private closed = false;

  constructor(
    private readonly options: SMTPConnectionOptions,
    private readonly auth: SMTPConnectionAuth | undefined,
    private readonly size: number,
  ) {}

  async sendRaw({ raw, envelope }: BuiltMessage): Promise<string> {
    for (;;) {
      const c = await this.acquire();
      try {
        const info = await new Promise<SMTPConnectionSendInfo>((resolve, reject) =>
          c.conn.send(envelope, raw, (err, i) => (err ? reject(err) : resolve(i))),
        );
        c.sent++;
        this.release(c);
        return typeof info.response === 'string' ? info.response.slice(0, 500) : '';
      } catch (e) {
        const err = e as SmtpError;
        const reused = c.sent > 0;
        if ((err.code === 'EENVELOPE' || err.code === 'EMESSAGE') && err.responseCode !== 421 && !c.dead) {
          // The server refused this message; the session itself is fine once reset.
          c.conn.reset((resetErr) => (resetErr ? this.discard(c) : this.release(c)));
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
    const c = this.idle.pop();
    if (c) return Promise.resolve(c);
    if (this.open < this.size) return this.connect();
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  private release(c: Pooled): void {
    if (c.dead) return;
    const next = this.waiting.shift();
    if (next) next.resolve(c);
    else if (this.closed) c.conn.quit();
    else this.idle.push(c);
  }

  /** Closes a connection that failed (once); a sender waiting for one gets a new connection. */
  private discard(c: Pooled): void {
    if (c.dead) return;
    c.dead = true;
    this.open--;
    const at = this.idle.indexOf(c);
    if (at >= 0) this.idle.splice(at, 1);
    c.conn.close();
    const next = this.waiting.shift();
    if (next) this.connect().then(next.resolve, next.reject);
  }

  private connect(): Promise<Pooled> {
    this.open++;
    const conn = new SMTPConnection(this.options);
    const c: Pooled = { conn, sent: 0, dead: false };
    return new Promise<Pooled>((resolve, reject) => {
      // Before it is ready a failure rejects the connect; after, an idle connection the server closes (or
      // that fails) leaves the pool, and a busy one fails its send, which discards it.
      const fail = (err: unknown) => {
        this.discard(c);
        reject(err);
      };
      conn.on('error', fail);
      conn.once('end', () => fail(Object.assign(new Error('SMTP connection closed'), { code: 'ECONNECTION' })));
      conn.connect((err) => {
        if (err) return fail(err);
        if (!this.auth || !conn.allowsAuth) return resolve(c);
        conn.login(this.auth, (loginErr) => (loginErr ? fail(loginErr) : resolve(c)));
      });
    });
  }
}
