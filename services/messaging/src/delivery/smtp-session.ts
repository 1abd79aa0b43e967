import net from 'node:net';
import os from 'node:os';
import tls from 'node:tls';

// One SMTP client session (RFC 5321) for the delivery pool: greeting, EHLO (HELO when refused), STARTTLS when
// offered (RFC 3207), AUTH PLAIN or LOGIN, then messages whose bytes are already built and signed. With
// PIPELINING (RFC 2920) the envelope (MAIL FROM, RCPT TO, DATA) goes in one write and the dot-stuffed body with its
// terminator in a second; messages given while another is in flight queue behind it, and each body is written with
// the next one's envelope (RFC 2920 lets the next transaction follow the end of data): one write and one read per
// message while the pool is busy. Errors carry what nodemailer's SMTPConnection
// put on them (code EENVELOPE/EMESSAGE/ECONNECTION/ETIMEDOUT/EAUTH/ETLS/EPROTOCOL, response, responseCode,
// command), which the pool and classifyFailure read.

export interface SmtpSessionOptions {
  host: string;
  port?: number;
  /** Implicit TLS (smtps). */
  secure?: boolean;
  /** Never upgrade with STARTTLS. */
  ignoreTLS?: boolean;
  tls?: tls.ConnectionOptions;
  connectionTimeout?: number;
  greetingTimeout?: number;
  socketTimeout?: number;
  /** The EHLO name; by default the host name when it is a FQDN, else [127.0.0.1] (as nodemailer). */
  name?: string;
}

export type SmtpError = Error & { code?: string; responseCode?: number; response?: string; command?: string };

export function smtpError(message: string, code: string, response?: string, command?: string): SmtpError {
  const err: SmtpError = new Error(response ? `${message}: ${response}` : message);
  err.code = code;
  if (response) {
    err.response = response;
    const n = Number(/^\d+/.exec(response)?.[0]);
    if (n) err.responseCode = n;
  }
  if (command) err.command = command;
  return err;
}

function defaultName(): string {
  let name = '';
  try {
    name = os.hostname();
  } catch {
    name = 'localhost';
  }
  if (!name || !name.includes('.')) return '[127.0.0.1]';
  return /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) ? `[${name}]` : name;
}

const NON_ASCII = /[\x80-\uFFFF]/;
const CR = 0x0d;
const LF = 0x0a;
const DOT = 0x2e;
const TERMINATOR = Buffer.from('\r\n.\r\n');
/** The terminator after a message that ends in CRLF. */
const DOT_LINE = TERMINATOR.subarray(2);
const DOT_BYTE = TERMINATOR.subarray(2, 3);

/** True when every CR is followed by LF and every LF follows a CR (no bare line ends to repair). */
function cleanLineEnds(raw: Buffer): boolean {
  for (let i = raw.indexOf(LF); i >= 0; i = raw.indexOf(LF, i + 1)) if (i === 0 || raw[i - 1] !== CR) return false;
  for (let i = raw.indexOf(CR); i >= 0; i = raw.indexOf(CR, i + 1)) if (raw[i + 1] !== LF) return false;
  return true;
}

/** True when `raw` goes into DATA as it is: CRLF line ends only, no line starting with a dot, ending in CRLF. */
export function dataReady(raw: Buffer): boolean {
  const n = raw.length;
  return (
    n >= 2 && raw[n - 2] === CR && raw[n - 1] === LF && raw[0] !== DOT && raw.indexOf('\n.') < 0 && cleanLineEnds(raw)
  );
}

/**
 * The message as DATA carries it (RFC 5321 4.5.2): a dot at the start of a line doubled, bare CR and LF made CRLF
 * (the same bytes as nodemailer's DataStream), followed by the terminating `.` line. Built messages have CRLF line
 * ends and rarely a leading dot, so usually this is the message plus the terminator, found with native scans.
 */
export function dataBytes(raw: Buffer): Buffer {
  const last = raw.length ? raw[raw.length - 1] : -1;
  const tail = last === LF ? TERMINATOR.subarray(2) : last === CR ? TERMINATOR.subarray(1) : TERMINATOR;
  const clean = cleanLineEnds(raw);
  if (clean && raw[0] !== DOT && raw.indexOf('\n.') < 0) return Buffer.concat([raw, tail]);
  const out: Buffer[] = [];
  let from = 0;
  if (clean) {
    // Only dots to double: each line that starts with one, found with native scans (QP-wrapped links often do).
    if (raw[0] === DOT) out.push(DOT_BYTE);
    for (let i = raw.indexOf('\n.'); i >= 0; i = raw.indexOf('\n.', i + 2)) {
      out.push(raw.subarray(from, i + 1), DOT_BYTE);
      from = i + 1;
    }
    out.push(raw.subarray(from), tail);
    return Buffer.concat(out);
  }
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i];
    const prev = i ? raw[i - 1] : -1;
    let insert: string | undefined;
    if (prev === CR && byte !== LF) insert = byte === DOT ? '\n.' : '\n';
    else if (byte === LF && prev !== CR) insert = '\r';
    else if (byte === DOT && (prev === LF || prev === -1)) insert = '.';
    if (insert) {
      out.push(raw.subarray(from, i), Buffer.from(insert));
      from = i;
    }
  }
  out.push(raw.subarray(from), tail);
  return Buffer.concat(out);
}

/** The replies to a waiting message's envelope, written with the body before it (none: it writes its own). */
type Written = { replies: Promise<string[]> } | undefined;

/** A message queued behind the one in flight: its envelope goes with a body before it, or on its own. */
interface Next {
  envelope: string;
  count: number;
  /** Called with the waiter of its envelope's replies once written with the body before, or with none. */
  go(written: Written): void;
}

/** Waits for the next `count` replies (a pipelined group is one waiter: one promise per write, not per reply). */
interface Waiter {
  count: number;
  replies: string[];
  resolve(replies: string[]): void;
  reject(err: SmtpError): void;
}

/** An open session; `connect()` answers one ready for messages (greeted, EHLO'd, upgraded and logged in). */
export class SmtpSession {
  /** EHLO keywords, upper case (`PIPELINING`, `AUTH`, ...), and the AUTH mechanisms offered. */
  private extensions = new Set<string>();
  private authMethods: string[] = [];
  private socket!: net.Socket;
  private secure: boolean;
  private buffer = '';
  /** Lines of a multi-line reply read so far. */
  private lines: string[] = [];
  private readonly waiters: Waiter[] = [];
  /** The command a connection failure is reported under (CONN until the message's bytes are written). */
  private stage = 'CONN';
  private failure?: SmtpError;
  private readonly name: string;
  /** Messages given and not yet answered: the one in flight and those queued behind it (`queued`). */
  private sending = 0;
  private readonly queued: Next[] = [];
  /** Called once when the session fails or the server closes it (also when idle in a pool). */
  onClose?: (err: SmtpError) => void;

  private constructor(private readonly opts: SmtpSessionOptions) {
    this.secure = Boolean(opts.secure);
    this.name = opts.name ?? defaultName();
  }

  get closed(): boolean {
    return this.failure !== undefined;
  }

  get allowsAuth(): boolean {
    return this.extensions.has('AUTH');
  }

  /** Whether more messages may be given while one is in flight (each envelope then goes with a body before it). */
  get pipelines(): boolean {
    return !this.failure && this.extensions.has('PIPELINING');
  }

  static async connect(opts: SmtpSessionOptions, auth?: { user: string; pass: string }): Promise<SmtpSession> {
    const s = new SmtpSession(opts);
    try {
      await s.open();
      await s.handshake(auth);
      s.stage = 'MAIL FROM';
    } catch (err) {
      s.fail(err as SmtpError);
      throw err;
    }
    return s;
  }

  /**
   * Sends one message; answers the server's final reply (`250 ...`). A refusal of the envelope (the session reset
   * before the answer) or of the message leaves the session usable; a connection failure closes it. While one
   * message is in flight more may be given when the session `pipelines`: they go after it, in order.
   */
  async send(envelope: { from: string; to: string[] }, raw: Buffer, ready = false): Promise<string> {
    const from = envelope.from.trim();
    const to = envelope.to.map((t) => t.trim());
    if (!to.length) throw smtpError('No recipients defined', 'EENVELOPE', undefined, 'API');
    if (/[\r\n<>]/.test(from)) throw smtpError(`Invalid sender ${JSON.stringify(from)}`, 'EENVELOPE', undefined, 'API');
    for (const t of to)
      if (!t || /[\r\n<>]/.test(t))
        throw smtpError(`Invalid recipient ${JSON.stringify(t)}`, 'EENVELOPE', undefined, 'API');
    if (this.failure) throw this.failure;
    if (this.sending > 0 && !this.pipelines) throw new Error('SMTP session busy');
    this.sending++;
    const turn = { handedOn: false };
    try {
      return await this.transaction(from, to, raw, ready, turn);
    } finally {
      this.sending--;
      // Ended without taking the next envelope along with its body (refused, failed, or none was queued yet):
      // the first message queued behind it writes its own.
      if (!turn.handedOn) this.queued.shift()?.go(undefined);
    }
  }

  private async transaction(
    from: string,
    to: string[],
    raw: Buffer,
    ready: boolean,
    turn: { handedOn: boolean },
  ): Promise<string> {
    const utf8 = this.extensions.has('SMTPUTF8') && (NON_ASCII.test(from) || to.some((t) => NON_ASCII.test(t)));
    const commands = [`MAIL FROM:<${from}>${utf8 ? ' SMTPUTF8' : ''}`, ...to.map((t) => `RCPT TO:<${t}>`), 'DATA'];
    let replies: string[];
    if (this.extensions.has('PIPELINING')) {
      const envelope = `${commands.join('\r\n')}\r\n`;
      // Behind a message in flight: a body's write takes this envelope along (or that message ends without one).
      const written =
        this.sending > 1
          ? await new Promise<Written>((go) => this.queued.push({ envelope, count: commands.length, go }))
          : undefined;
      let pending = written?.replies;
      if (this.failure) throw this.failure;
      if (!pending) {
        this.stage = 'MAIL FROM';
        pending = this.replies(commands.length);
        this.write(envelope);
      }
      replies = await pending;
    } else {
      this.stage = 'MAIL FROM';
      replies = [];
      for (const [i, command] of commands.entries()) {
        replies.push(await this.command(command));
        // Without pipelining, stop at a refused sender or, after the last recipient, when none was taken.
        if (i === 0 && replies[0][0] !== '2') break;
        if (i === commands.length - 2 && !replies.slice(1).some((r) => r[0] === '2')) break;
      }
    }
    const refused = this.envelopeError(replies, to.length);
    const dataReply = replies[to.length + 1];
    if (refused || !dataReply.startsWith('354')) {
      // A server that opened DATA anyway gets an empty message ended; the transaction is reset either way.
      if (dataReply?.startsWith('354')) await this.command('.');
      await this.reset().catch(() => this.close());
      throw refused ?? smtpError('Data command failed', 'EENVELOPE', dataReply, 'DATA');
    }
    this.stage = 'DATA';
    const pending = this.reply();
    // The envelope of the first message queued behind this one follows the end of data, in the same write.
    const next = this.failure ? undefined : this.queued.shift();
    const nextReplies = next && this.replies(next.count);
    turn.handedOn = next !== undefined;
    if (!this.failure) {
      // One writev for the message, its terminator and the next envelope, without copying the message.
      this.socket.cork();
      if (ready) this.socket.write(raw);
      this.socket.write(ready ? DOT_LINE : dataBytes(raw));
      if (next) this.socket.write(next.envelope);
      this.socket.uncork();
    }
    next?.go(nextReplies && { replies: nextReplies });
    const answer = await pending;
    // A connection failure is reported under DATA until the next message's own body (nothing is retried as unsent).
    if (!next) this.stage = 'MAIL FROM';
    if (answer[0] !== '2') throw smtpError('Message failed', 'EMESSAGE', answer, 'DATA');
    return answer;
  }

  /** RSET after a refused envelope. */
  private async reset(): Promise<void> {
    const r = await this.command('RSET');
    if (r[0] !== '2') throw smtpError('Could not reset session', 'EPROTOCOL', r, 'RSET');
  }

  /** QUIT, then closes (without waiting for the server). */
  quit(): void {
    if (this.failure) return;
    this.failure = smtpError('Connection closed', 'ECONNECTION', undefined, 'CONN');
    this.socket.end('QUIT\r\n');
    this.socket.setTimeout(1000, () => this.socket.destroy());
  }

  close(): void {
    this.fail(smtpError('Connection closed', 'ECONNECTION', undefined, 'CONN'));
  }

  private envelopeError(replies: string[], recipients: number): SmtpError | undefined {
    const mail = replies[0];
    if (mail[0] !== '2') return smtpError('Mail command failed', 'EENVELOPE', mail, 'MAIL FROM');
    const rcpt = replies.slice(1, 1 + recipients).filter((r) => r !== undefined);
    if (rcpt.some((r) => r[0] === '2')) return undefined;
    // Every recipient refused: a temporary refusal when there is one (some were only deferred), else the last.
    const reply = rcpt.find((r) => r[0] === '4') ?? rcpt[rcpt.length - 1];
    return smtpError("Can't send mail - all recipients were rejected", 'EENVELOPE', reply, 'RCPT TO');
  }

  private open(): Promise<void> {
    const { host, port, secure } = { ...this.opts, port: this.opts.port ?? (this.opts.secure ? 465 : 587) };
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(smtpError('Connection timeout', 'ETIMEDOUT', undefined, 'CONN')),
        this.opts.connectionTimeout ?? 120_000,
      );
      const onConnect = () => {
        clearTimeout(timer);
        socket.removeListener('error', onError);
        resolve();
      };
      const onError = (err: Error) => {
        clearTimeout(timer);
        reject(Object.assign(err, { code: 'ECONNECTION', command: 'CONN' }));
      };
      const socket = secure
        ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ...this.opts.tls }, onConnect)
        : net.connect({ host, port }, onConnect);
      socket.once('error', onError);
      this.attach(socket);
    });
  }

  private attach(socket: net.Socket): void {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', (err: Error & { code?: string }) =>
      this.fail(
        Object.assign(err, {
          code: this.stage === 'STARTTLS' ? 'ETLS' : err.code === 'ETIMEDOUT' ? 'ETIMEDOUT' : 'ECONNECTION',
          command: this.stage,
        }) as SmtpError,
      ),
    );
    socket.on('close', () =>
      this.fail(smtpError('Connection closed unexpectedly', 'ECONNECTION', undefined, this.stage)),
    );
    socket.setTimeout(this.opts.socketTimeout ?? 600_000, () =>
      this.fail(smtpError('Timeout', 'ETIMEDOUT', undefined, this.stage)),
    );
  }

  private async handshake(auth?: { user: string; pass: string }): Promise<void> {
    const greeting = await this.withTimeout(this.reply(), this.opts.greetingTimeout ?? 30_000);
    if (!greeting.startsWith('220')) throw smtpError('Invalid greeting', 'EPROTOCOL', greeting, 'CONN');
    await this.hello();
    if (!this.secure && !this.opts.ignoreTLS && this.extensions.has('STARTTLS')) {
      const r = await this.command('STARTTLS');
      if (r[0] !== '2') throw smtpError('Error upgrading connection with STARTTLS', 'ETLS', r, 'STARTTLS');
      await this.upgrade();
      await this.hello();
    }
    if (auth && this.allowsAuth) await this.login(auth);
  }

  private async hello(): Promise<void> {
    let r = await this.command(`EHLO ${this.name}`);
    if (r[0] !== '2') {
      r = await this.command(`HELO ${this.name}`);
      if (r[0] !== '2') throw smtpError('Invalid response for EHLO/HELO', 'EPROTOCOL', r, 'HELO');
      this.extensions = new Set();
      this.authMethods = [];
      return;
    }
    const lines = r.split('\n').slice(1);
    this.extensions = new Set(lines.map((l) => l.slice(4).trim().split(/[\s=]/)[0].toUpperCase()));
    const authLine = lines.map((l) => l.slice(4).trim()).find((l) => /^AUTH[\s=]/i.test(l));
    this.authMethods = authLine ? authLine.slice(5).trim().toUpperCase().split(/\s+/) : [];
  }

  /** RFC 3207: what was read before the handshake is discarded; the session goes on over TLS. */
  private upgrade(): Promise<void> {
    const plain = this.socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('close');
    plain.removeAllListeners('error');
    plain.setTimeout(0);
    plain.on('error', () => undefined);
    this.buffer = '';
    this.lines = [];
    const host = this.opts.host;
    this.stage = 'STARTTLS';
    return new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(Object.assign(err, { code: 'ETLS', command: 'STARTTLS' }));
      const secured = tls.connect(
        { socket: plain, servername: net.isIP(host) ? undefined : host, ...this.opts.tls },
        () => {
          secured.removeListener('error', onError);
          this.secure = true;
          this.stage = 'CONN';
          resolve();
        },
      );
      secured.once('error', onError);
      this.attach(secured);
    });
  }

  private async login({ user, pass }: { user: string; pass: string }): Promise<void> {
    const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
    let r: string;
    let command: string;
    if (this.authMethods.includes('PLAIN') || !this.authMethods.includes('LOGIN')) {
      command = 'AUTH PLAIN';
      r = await this.command(`AUTH PLAIN ${b64(`\u0000${user}\u0000${pass}`)}`);
    } else {
      command = 'AUTH LOGIN';
      r = await this.command('AUTH LOGIN');
      if (r.startsWith('334')) r = await this.command(b64(user));
      if (r.startsWith('334')) r = await this.command(b64(pass));
    }
    if (!r.startsWith('235')) throw smtpError('Invalid login', 'EAUTH', r, command);
  }

  private command(line: string): Promise<string> {
    const pending = this.reply();
    this.write(`${line}\r\n`);
    return pending;
  }

  private write(data: string | Buffer): void {
    if (!this.failure) this.socket.write(data);
  }

  private replies(count: number): Promise<string[]> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.push({ count, replies: [], resolve, reject }));
  }

  private async reply(): Promise<string> {
    return (await this.replies(1))[0];
  }

  private withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(smtpError('Greeting never received', 'ETIMEDOUT', undefined, 'CONN')), ms);
    });
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }

  /** Splits replies into lines; a multi-line reply (`250-...`) ends at its `NNN ` line, its lines joined by \n. */
  private onData(chunk: string): void {
    this.buffer += chunk;
    for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, '');
      this.buffer = this.buffer.slice(nl + 1);
      this.lines.push(line);
      if (line.length > 3 && line[3] === '-') continue;
      const reply = this.lines.join('\n');
      this.lines = [];
      const waiter = this.waiters[0];
      if (waiter) {
        waiter.replies.push(reply);
        if (waiter.replies.length === waiter.count) {
          this.waiters.shift();
          waiter.resolve(waiter.replies);
        }
      }
      // A reply nobody waits for: the server speaks out of turn (421 before an idle close): the session ends.
      else this.fail(smtpError('Unexpected reply', 'EPROTOCOL', reply, this.stage));
    }
  }

  private fail(err: SmtpError): void {
    if (this.failure) {
      if (this.socket && !this.socket.destroyed) this.socket.destroy();
      return;
    }
    this.failure = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
    this.socket?.destroy();
    this.onClose?.(err);
  }
}
