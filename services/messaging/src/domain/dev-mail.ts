import { isUuid } from '@svc/lib/ids';
import { type AddressObject, simpleParser } from 'mailparser';
import type { SinkMessage } from '../delivery/smtp-sink.js';
import type { DevMailRow, DevMailStore } from '../store/dev-mail-store.js';

// Embedded mode's local sink holds every tenant's mail, kept in messaging's database (dev_mail),
// so the viewer survives restarts. A signed-in user sees only the mail of the projects they are a
// member of. A message is attributed by the X-Email-Id the platform puts on it and the email row
// that id names. Mail that cannot be attributed (identity's account mail: verification, password
// reset) is shown only to the user it was sent to, so an embedded platform's accounts can verify.

export interface DevMailHeader {
  name: string;
  value: string;
}

export interface DevMailAttachment {
  filename: string;
  contentType: string;
  size: number;
  contentId: string;
  disposition: string;
  content: Buffer;
}

export interface DevMailSummary {
  id: string;
  emailId: string;
  projectId: string;
  mailFrom: string;
  rcptTo: string[];
  from: string;
  to: string[];
  subject: string;
  receivedAt: Date;
  size: number;
  attachmentCount: number;
}

export interface DevMailMessage extends DevMailSummary {
  text: string;
  html: string;
  headers: DevMailHeader[];
  attachments: DevMailAttachment[];
  raw: Buffer;
}

/** The message's X-Email-Id when its header section has exactly one well-formed one. */
export function emailIdOf(raw: Buffer): string | undefined {
  const end = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  const found = [...head.matchAll(/^X-Email-Id:[ \t]*([^\r\n]*?)[ \t]*$/gim)].map((m) => m[1]);
  return found.length === 1 && isUuid(found[0]) ? found[0].toLowerCase() : undefined;
}

/** Every header line of the header section, in order, unfolded (RFC 5322 2.2.3), as sent (not decoded). */
export function headerLines(raw: Buffer): DevMailHeader[] {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf : lf;
  const head = raw.subarray(0, end < 0 ? raw.length : end).toString('utf8');
  const out: DevMailHeader[] = [];
  for (const line of head.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length) {
      out[out.length - 1].value += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon > 0) out.push({ name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() });
  }
  return out;
}

const addresses = (a: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(a) ? a : a ? [a] : []).flatMap((o) => o.value.map((v) => v.address ?? '').filter(Boolean));

async function parse(row: DevMailRow): Promise<DevMailMessage> {
  const mail = await simpleParser(row.raw);
  const attachments = mail.attachments.map((a) => ({
    filename: a.filename ?? '',
    contentType: a.contentType,
    size: a.size,
    contentId: (a.contentId ?? '').replace(/^<|>$/g, ''),
    disposition: a.contentDisposition ?? 'attachment',
    content: a.content,
  }));
  return {
    id: row.id,
    emailId: row.email_id ?? '',
    projectId: row.project_id ?? '',
    mailFrom: row.mail_from,
    rcptTo: row.rcpt_to,
    from: mail.from?.text ?? row.mail_from,
    to: addresses(mail.to),
    subject: mail.subject ?? '',
    receivedAt: row.received_at,
    size: row.raw.length,
    attachmentCount: attachments.length,
    text: mail.text ?? '',
    html: typeof mail.html === 'string' ? mail.html : '',
    headers: headerLines(row.raw),
    attachments,
    raw: row.raw,
  };
}

export class DevMail {
  constructor(private readonly store: DevMailStore) {}

  /** The sink's onMessage: kept before the sink answers 250, so an accepted message is never lost. */
  record(m: SinkMessage): Promise<void> {
    return this.store.insert({
      id: m.id,
      email_id: emailIdOf(m.raw) ?? null,
      mail_from: m.from,
      rcpt_to: m.to,
      raw: m.raw,
    });
  }

  /** Newest first, at most `limit`: mail sent for one of `projectIds`, and account mail to `recipient`. */
  async list(projectIds: string[], recipient: string, limit: number): Promise<DevMailMessage[]> {
    const projects = projectIds.filter(isUuid);
    if (!projects.length && !recipient) return [];
    return Promise.all((await this.store.list(projects, recipient.trim(), limit)).map(parse));
  }

  /** One message of one of `projectIds`, or account mail to `recipient`; else null. */
  async get(id: string, projectIds: string[], recipient: string): Promise<DevMailMessage | null> {
    const projects = projectIds.filter(isUuid);
    if (!isUuid(id) || (!projects.length && !recipient)) return null;
    const row = await this.store.get(id, projects, recipient.trim());
    return row ? parse(row) : null;
  }
}
