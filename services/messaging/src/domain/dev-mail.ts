import type { JsonObject } from '@bufbuild/protobuf';
import { isUuid } from '@svc/lib/ids';
import { simpleParser } from 'mailparser';
import type { SinkMessage } from '../delivery/smtp-sink.js';

// Embedded mode's local sink holds every tenant's mail; a signed-in user sees only the mail of
// the projects they are a member of. A message is attributed by the X-Email-Id the platform
// puts on it and the email row that id names; mail that cannot be attributed is shown to no one.

export interface DevMailItem {
  id: string;
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  headers: JsonObject;
  receivedAt: Date;
  size: number;
}

/** The narrow edge this needs from the emails store. */
export interface EmailOwners {
  ownedBy(emailIds: string[], projectIds: string[]): Promise<Set<string>>;
}

/** The message's X-Email-Id when its header section has exactly one well-formed one. */
export function emailIdOf(raw: Buffer): string | undefined {
  const end = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  const found = [...head.matchAll(/^X-Email-Id:[ \t]*([^\r\n]*?)[ \t]*$/gim)].map((m) => m[1]);
  return found.length === 1 && isUuid(found[0]) ? found[0].toLowerCase() : undefined;
}

async function parsed(m: SinkMessage): Promise<DevMailItem> {
  const mail = await simpleParser(m.raw);
  const headers: JsonObject = {};
  for (const [k, v] of mail.headers) if (typeof v === 'string') headers[k] = v;
  return {
    id: m.id,
    from: mail.from?.text ?? m.from,
    to: m.to,
    subject: mail.subject ?? '',
    text: mail.text ?? '',
    html: typeof mail.html === 'string' ? mail.html : '',
    headers,
    receivedAt: m.receivedAt,
    size: m.raw.length,
  };
}

export class DevMail {
  constructor(
    private readonly sink: { messages(): SinkMessage[] },
    private readonly owners: EmailOwners,
  ) {}

  /** Newest first, at most `limit`, only mail sent for one of `projectIds`. */
  async list(projectIds: string[], limit: number): Promise<DevMailItem[]> {
    const projects = projectIds.filter(isUuid);
    if (!projects.length) return [];
    const newest = this.sink.messages().reverse();
    const ids = newest.map((m) => emailIdOf(m.raw));
    const owned = await this.owners.ownedBy([...new Set(ids.filter(isUuid))], projects);
    const mine = newest.filter((_, i) => owned.has(ids[i] ?? '')).slice(0, limit);
    return Promise.all(mine.map(parsed));
  }
}
