import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server';

// A local SMTP server that keeps what it receives: embedded mode's outbox for newcomers
// (GET /dev/mail), and the base of the tests' sink.

export interface SinkMessage {
  id: string;
  from: string;
  to: string[];
  raw: Buffer;
  receivedAt: Date;
}

export interface SmtpSinkOptions {
  host?: string;
  port?: number;
  /** How many messages to keep (oldest dropped first). */
  keep?: number;
  /** Return an SMTP error (with responseCode) to refuse a recipient. */
  onRecipient?: (address: string) => { code: number; message: string } | undefined;
  /** Called before the sink answers; a promise is awaited, and its rejection answers 451 (the sender retries). */
  onMessage?: (m: SinkMessage) => void | Promise<void>;
}

export interface SmtpSink {
  port: number;
  url: string;
  messages(): SinkMessage[];
  clear(): void;
  close(): Promise<void>;
}

export async function startSmtpSink(opts: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const keep = opts.keep ?? 500;
  let stored: SinkMessage[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 60 * 1024 * 1024,
    banner: 'svc local sink',
    onRcptTo(address: SMTPServerAddress, _session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const refusal = opts.onRecipient?.(address.address);
      if (!refusal) return callback();
      callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const message: SinkMessage = {
          id: randomUUID(),
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          receivedAt: new Date(),
        };
        Promise.resolve()
          .then(() => opts.onMessage?.(message))
          .then(
            () => {
              stored.push(message);
              if (stored.length > keep) stored = stored.slice(-keep);
              callback();
            },
            () => callback(Object.assign(new Error('Message not stored; try again later'), { responseCode: 451 })),
          );
      });
    },
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  server.on('error', () => undefined);
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    url: `smtp://${host}:${port}?tls=off`,
    messages: () => [...stored],
    clear: () => {
      stored = [];
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
