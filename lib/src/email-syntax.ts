const MAX_EMAIL_LENGTH = 254; // RFC 5321 forward-path limit
const MAX_LOCAL_LENGTH = 64;

// Dot-atom local part (RFC 5322 atext) and hostname labels with an alphabetic or punycode TLD.
// Quoted local parts and IP literals are refused on purpose: no mailbox provider hands them out
// and they are a common vector for header tricks.
const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const TLD = '(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})';
const EMAIL_PATTERN = new RegExp(`^${ATOM}(?:\\.${ATOM})*@(?:${LABEL}\\.)+${TLD}$`);

/** The one address syntax every service accepts; the string is checked as given (no trimming). */
export function isValidEmail(s: string): boolean {
  if (s.length > MAX_EMAIL_LENGTH || !EMAIL_PATTERN.test(s)) return false;
  return s.indexOf('@') <= MAX_LOCAL_LENGTH;
}
