import nodemailer from 'nodemailer';

export interface SystemMail {
  to: string;
  subject: string;
  text: string;
}

export interface SystemMailer {
  send(mail: SystemMail): Promise<void>;
  close(): void;
}

/**
 * Account mail (verification, password reset) from the platform's own sender (SYSTEM_FROM), straight
 * to the SMTP relay messaging uses (SMTP_URL, or the local sink): it belongs to no project, so it
 * does not go through a project's verified sender domain. `?tls=off` and `?tls=insecure` as in messaging.
 */
export function createSystemMailer(url: string, from: string): SystemMailer {
  const u = new URL(url);
  const tls = u.searchParams.get('tls');
  const transporter = nodemailer.createTransport({
    host: u.hostname,
    ...(u.port ? { port: Number(u.port) } : {}),
    secure: u.protocol === 'smtps:',
    ...(u.username ? { auth: { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } } : {}),
    ...(tls === 'off' ? { ignoreTLS: true } : {}),
    ...(tls === 'insecure' ? { tls: { rejectUnauthorized: false } } : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  });
  return {
    async send(mail) {
      await transporter.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    close: () => transporter.close(),
  };
}
