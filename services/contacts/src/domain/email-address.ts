// One definition of a usable address, shared by the API, CSV import and filters.

const MAX_EMAIL_LENGTH = 254; // RFC 5321 forward-path limit
const MAX_LOCAL_LENGTH = 64;

// Dot-atom local part (no quoted strings), hostname labels, alphabetic or punycode TLD.
const EMAIL_PATTERN =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})$/;

/** local@domain.tld, at most 254 characters; the string is checked as given (no trimming). */
export function isValidEmail(s: string): boolean {
  if (s.length > MAX_EMAIL_LENGTH || !EMAIL_PATTERN.test(s)) return false;
  return s.indexOf('@') <= MAX_LOCAL_LENGTH;
}

/** Emails are unique per project regardless of case (contacts_project_email index). */
export function normalizeEmailKey(email: string): string {
  return email.trim().toLowerCase();
}
