import type { TemplateType } from '../store/templates-store.js';

export interface ListUnsubscribe {
  httpsUrl: string;
  mailto: string;
}

// Headers a caller may not set (`422 reserved_header`), compared without case:
// - the ones the service composes: addressing, MIME structure, DKIM, the one-click unsubscribe
//   (RFC 8058), bulk-mail markers and X-Email-Id (provider webhooks and support find mail by it);
// - Cc/Bcc/Sender/Resent-* would reach or claim people outside the per-recipient rules of /v1/send;
// - trace and authentication results (Received, Authentication-Results, ARC-*, Received-SPF,
//   Delivered-To) are written by the mail servers on the way; forged ones mislead filters.
// X-Mailer, In-Reply-To, References, List-Id and other X- headers stay the caller's.
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'reply-to',
  'sender',
  'return-path',
  'date',
  'message-id',
  'mime-version',
  'dkim-signature',
  'domainkey-signature',
  'list-unsubscribe',
  'list-unsubscribe-post',
  'precedence',
  'auto-submitted',
  'x-email-id',
  'received',
  'received-spf',
  'authentication-results',
  'delivered-to',
]);
const RESERVED_PREFIXES = ['content-', 'resent-', 'arc-'];

export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/**
 * Headers the platform adds. MARKETING mail, and any mail whose body carries the
 * recipient's unsubscribe link, advertises RFC 8058 one-click unsubscribe (https + mailto);
 * bulk mail and workflow mail also ask auto-responders to stay quiet. Caller headers were validated by the
 * send-request parser; reserved names are dropped here as well and the platform's headers
 * come last, so no caller header (in any letter case) stands in for one of them.
 */
export function composeHeaders(opts: {
  type: TemplateType;
  bodyHasUnsubscribeLink: boolean;
  unsubscribe: ListUnsubscribe;
  emailId: string;
  /** Sent by a workflow step, not by a person or an application answering one: RFC 3834 auto-generated. */
  automatic?: boolean;
  custom?: Record<string, string>;
}): Record<string, string> {
  const headers: Record<string, string> = {};
  if (opts.type === 'MARKETING' || opts.bodyHasUnsubscribeLink) {
    headers['List-Unsubscribe'] = `<${opts.unsubscribe.httpsUrl}>, <${opts.unsubscribe.mailto}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
  }
  if (opts.type === 'MARKETING') headers.Precedence = 'bulk';
  // Auto-responders (RFC 3834) do not answer it: no reply for a workflow on email.received to ping-pong with.
  if (opts.type === 'MARKETING' || opts.automatic) headers['Auto-Submitted'] = 'auto-generated';
  headers['X-Email-Id'] = opts.emailId;
  // Most mail has no caller headers (every campaign email): the platform's are the whole set.
  if (!opts.custom) return headers;
  const custom = Object.entries(opts.custom).filter(([name]) => !isReservedHeader(name));
  return custom.length ? { ...Object.fromEntries(custom), ...headers } : headers;
}

/** Characters encodeURIComponent never encodes. */
const URI_PLAIN = /^[A-Za-z0-9\-_.!~*'()]*$/;

/** `mailto:` form of List-Unsubscribe: the token in the subject identifies the recipient. */
export function unsubscribeMailto(senderDomain: string, token: string): string {
  // A token of ours (base64url, a dot) is what encodeURIComponent leaves as it is: only the space is encoded.
  const subject = URI_PLAIN.test(token) ? `unsubscribe%20${token}` : encodeURIComponent(`unsubscribe ${token}`);
  return `mailto:unsubscribe@${senderDomain}?subject=${subject}`;
}
