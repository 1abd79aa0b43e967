import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { BuiltMessage } from './mime-build.js';

export type MailMessage = Mail.Options;

export interface MailTransport {
  send(message: MailMessage): Promise<void>;
  /**
   * Sends MIME bytes built (and DKIM-signed) elsewhere, unchanged, to the envelope's recipients; answers the
   * server's reply to the message (`250 ...`, shown as the attempt's SMTP answer by GET /emails/{id}).
   */
  sendRaw(message: BuiltMessage): Promise<string>;
  close(): void;
}

/**
 * nodemailer's pooled SMTP transport to SMTP_URL (`smtp://user:pass@host:port`, `smtps://`
 * for implicit TLS). `?tls=insecure` accepts a self-signed relay certificate and
 * `?tls=off` never upgrades with STARTTLS (loopback sinks).
 */
export function createSmtpTransport(url: string, poolSize: number): MailTransport {
  const u = new URL(url);
  const tls = u.searchParams.get('tls');
  const transporter = nodemailer.createTransport({
    pool: true,
    maxConnections: poolSize,
    maxMessages: Number.POSITIVE_INFINITY,
    host: u.hostname,
    ...(u.port ? { port: Number(u.port) } : {}),
    secure: u.protocol === 'smtps:',
    ...(u.username ? { auth: { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } } : {}),
    ...(tls === 'off' ? { ignoreTLS: true } : {}),
    ...(tls === 'insecure' ? { tls: { rejectUnauthorized: false } } : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
  });
  return {
    async send(message) {
      await transporter.sendMail(message);
    },
    async sendRaw({ raw, envelope }) {
      const info = await transporter.sendMail({ envelope, raw });
      return typeof info.response === 'string' ? info.response.slice(0, 500) : '';
    },
    close() {
      transporter.close();
    },
  };
}
