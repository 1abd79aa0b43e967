import type { TemplateType } from '../store/templates-store.js';

export interface ListUnsubscribe {
  httpsUrl: string;
  mailto: string;
}

/**
 * Headers the platform adds. MARKETING mail, and any mail whose body carries the
 * recipient's unsubscribe link, advertises RFC 8058 one-click unsubscribe (https + mailto);
 * bulk mail also asks auto-responders to stay quiet. Caller headers were validated
 * (no reserved names, no CR/LF) by the send-request parser and come last.
 */
export function composeHeaders(opts: {
  type: TemplateType;
  bodyHasUnsubscribeLink: boolean;
  unsubscribe: ListUnsubscribe;
  emailId: string;
  custom?: Record<string, string>;
}): Record<string, string> {
  const headers: Record<string, string> = {};
  if (opts.type === 'MARKETING' || opts.bodyHasUnsubscribeLink) {
    headers['List-Unsubscribe'] = `<${opts.unsubscribe.httpsUrl}>, <${opts.unsubscribe.mailto}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
  }
  if (opts.type === 'MARKETING') {
    headers.Precedence = 'bulk';
    headers['Auto-Submitted'] = 'auto-generated';
  }
  headers['X-Email-Id'] = opts.emailId;
  return { ...headers, ...opts.custom };
}

/** `mailto:` form of List-Unsubscribe: the token in the subject identifies the recipient. */
export function unsubscribeMailto(senderDomain: string, token: string): string {
  return `mailto:unsubscribe@${senderDomain}?subject=${encodeURIComponent(`unsubscribe ${token}`)}`;
}
