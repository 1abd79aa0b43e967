// Address syntax is lib/email-syntax.ts (shared with messaging); re-exported for this service's modules.
export { isValidEmail } from '@svc/lib/email-syntax';

/** Emails are unique per project regardless of case (contacts_project_email index). */
export function normalizeEmailKey(email: string): string {
  return email.trim().toLowerCase();
}
