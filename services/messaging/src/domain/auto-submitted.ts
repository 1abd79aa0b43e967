/** A header as mailparser keeps it in `headerLines`: the lower-case name and the raw line, folds included. */
export interface HeaderLine {
  key: string;
  line: string;
}

/** Precedence values of mail nobody typed (RFC 3834 section 2: responders must not answer them either). */
const AUTOMATIC_PRECEDENCE = new Set(['bulk', 'junk', 'list', 'auto_reply']);

/** A header's value: after the name's colon, unfolded, without a trailing comment or parameters. */
function headerValue(h: HeaderLine): string {
  const raw = h.line.slice(h.line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ');
  return raw
    .replace(/\(.*?\)/g, '')
    .split(';')[0]
    .trim()
    .toLowerCase();
}

/**
 * Whether received mail says it was sent automatically (an auto-responder, a list, a bulk sender), by the header
 * that says so ("Auto-Submitted: auto-replied"), or undefined for mail a person sent: `Auto-Submitted` other than
 * `no` (RFC 3834), `Precedence: bulk|junk|list|auto_reply`, and the `X-Autoreply` / `X-Autorespond` headers of
 * common auto-responders. Such mail starts no workflow: answering it could ping-pong with the responder.
 */
export function automaticMail(headers: readonly HeaderLine[]): string | undefined {
  for (const h of headers) {
    const key = h.key.toLowerCase();
    const value = key === 'auto-submitted' || key === 'precedence' ? headerValue(h) : '';
    const automatic =
      (key === 'auto-submitted' && value !== 'no' && value !== '') ||
      (key === 'precedence' && AUTOMATIC_PRECEDENCE.has(value)) ||
      key === 'x-autoreply' ||
      key === 'x-autorespond';
    if (automatic) return h.line.replace(/\r?\n[ \t]+/g, ' ').trim();
  }
  return undefined;
}
