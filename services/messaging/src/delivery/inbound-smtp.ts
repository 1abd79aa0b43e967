import type { AddressInfo } from 'node:net';
import { isDependencyUnavailable } from '@svc/lib/dependency-errors';
import type { Logger } from '@svc/lib/logger';
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server';
import { InboundRefusal, type InboundMail } from '../domain/inbound-mail.js';

/** Largest inbound message accepted (SIZE is advertised; bigger is refused with 552). */
const MAX_INBOUND_BYTES = 10 * 1024 * 1024;
const MAX_RECIPIENTS = 100;

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

/** Any other failure is temporary for the sending server (451): it retries later. */
function asSmtpError(err: unknown): Error {
  if (err instanceof InboundRefusal) return smtpError(err.responseCode, err.message);
  return smtpError(451, isDependencyUnavailable(err) ? '4.3.0 Try again later' : '4.3.0 Local error; try again later');
}

/**
 * The SMTP listener of inbound mail (INBOUND_SMTP_PORT): recipients at the projects' verified domains only,
 * no AUTH (it receives, it never relays), STARTTLS off (put a TLS-terminating MX in front in production).
 */
export async function startInboundSmtp(
  inbound: InboundMail,
  opts: { host: string; port: number; logger: Logger; maxBytes?: number },
): Promise<{ port: number; close(): Promise<void> }> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: opts.maxBytes ?? MAX_INBOUND_BYTES,
    // RFC 5321's minimum; more is a 452 (each recipient is a domain lookup and part of the message's event).
    maxRecipients: MAX_RECIPIENTS,
    banner: 'inbound mail',
    onRcptTo(address: SMTPServerAddress, _session: SMTPServerSession, callback: (err?: Error | null) => void) {
      inbound.recipientProjects(address.address).then(
        () => callback(),
        (err) => callback(asSmtpError(err)),
      );
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      const tooBig = () => (stream as unknown as { sizeExceeded?: boolean }).sizeExceeded;
      // smtp-server reads a message past SIZE to its end (then the 552): keeping those bytes let one
      // connection fill the process's memory.
      stream.on('data', (c: Buffer) => {
        if (tooBig()) chunks.length = 0;
        else chunks.push(c);
      });
      stream.on('end', () => {
        if (tooBig()) {
          callback(smtpError(552, '5.3.4 Message too big'));
          return;
        }
        inbound
          .receive({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks),
          })
          .then(
            (r) => {
              opts.logger.info(r, 'inbound mail received');
              callback();
            },
            (err) => {
              if (!(err instanceof InboundRefusal)) opts.logger.warn({ err }, 'inbound mail failed');
              callback(asSmtpError(err));
            },
          );
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  server.on('error', (err) => opts.logger.warn({ err }, 'inbound smtp error'));
  return {
    port: (server.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
