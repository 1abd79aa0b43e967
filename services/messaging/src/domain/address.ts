import { z } from 'zod';
import { isValidEmail } from '@svc/lib/email-syntax';
import { parseOrThrow } from '@svc/lib/zod-errors';

/** A sender or recipient after parsing: SPEC.md allows `"a@b.com"`, `"Name <a@b.com>"` or `{name, email}`. */
export interface Address {
  name?: string;
  email: string;
}

/** An address as written: `"a@b.com"`, `"Name <a@b.com>"` or `{name, email}` (checked by `addressSchema`). */
export type AddressInput = string | { name?: string; email?: string };

const NAME_MAX = 200;
const LINE_BREAK = /[\r\n]/;

export { isValidEmail };

export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/** nodemailer's object form: it quotes and RFC 2047-encodes the name itself, so we never build header text. */
export function formatAddress(address: Address): { name: string; address: string } {
  return { name: address.name ?? '', address: address.email };
}

const NAME_ADDR = /^(.*?)\s*<([^<>]*)>$/s;

function unquoteName(raw: string): string {
  const name = raw.trim();
  if (name.length >= 2 && name.startsWith('"') && name.endsWith('"')) {
    return name.slice(1, -1).replace(/\\(.)/g, '$1').trim();
  }
  return name;
}

type Issue = { path: string[]; message: string; code: string };

function problems(address: Address): Issue[] {
  const issues: Issue[] = [];
  const { name, email } = address;
  if (name !== undefined) {
    if (LINE_BREAK.test(name))
      issues.push({ path: ['name'], message: 'Name must not contain line breaks', code: 'invalid_string' });
    else if (name.length > NAME_MAX)
      issues.push({ path: ['name'], message: `Name must be at most ${NAME_MAX} characters`, code: 'too_big' });
  }
  if (LINE_BREAK.test(email) || !isValidEmail(email))
    issues.push({ path: ['email'], message: 'Invalid email', code: 'invalid_string' });
  return issues;
}

function splitAddress(input: string): Address {
  // Line breaks are checked on the raw text so `trim()` cannot hide a trailing CRLF.
  if (LINE_BREAK.test(input)) return { email: input };
  const match = NAME_ADDR.exec(input.trim());
  if (!match) return { email: input.trim() };
  return { name: unquoteName(match[1]) || undefined, email: match[2].trim() };
}

function fromObject(value: Record<string, unknown>, ctx: z.RefinementCtx): Address | undefined {
  const { name, email } = value;
  if (typeof email !== 'string') {
    ctx.addIssue({
      code: 'custom',
      path: ['email'],
      message: email === undefined ? 'Required' : 'Expected string',
      params: { code: 'invalid_type' },
    });
    return undefined;
  }
  if (name !== undefined && name !== null && typeof name !== 'string') {
    ctx.addIssue({ code: 'custom', path: ['name'], message: 'Expected string', params: { code: 'invalid_type' } });
    return undefined;
  }
  return { name: name?.trim() || undefined, email: email.trim() };
}

/**
 * Zod schema for one address in any accepted form, output normalised to `Address`.
 * Object errors land on `<path>.email` / `<path>.name`; string errors on `<path>` itself.
 */
export const addressSchema = z.unknown().transform((value, ctx): Address => {
  const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
  if (typeof value !== 'string' && !isObject) {
    const message = value === undefined ? 'Required' : 'Expected an email address string or {name, email}';
    ctx.addIssue({ code: 'custom', message, params: { code: 'invalid_type' } });
    return z.NEVER;
  }
  const address = typeof value === 'string' ? splitAddress(value) : fromObject(value as Record<string, unknown>, ctx);
  if (!address) return z.NEVER;
  const issues = problems(address);
  for (const issue of issues) {
    // A string address is one field: report on it, not on an invented sub-path.
    ctx.addIssue({
      code: 'custom',
      path: isObject ? issue.path : [],
      message: issue.message,
      params: { code: issue.code },
    });
  }
  if (issues.length) return z.NEVER;
  return address.name ? { name: address.name, email: address.email } : { email: address.email };
});

/** Parses one address or throws 422 VALIDATION_ERROR with `field` as the path prefix. */
export function parseAddress(input: unknown, field = 'email'): Address {
  return parseOrThrow(z.object({ [field]: addressSchema }), { [field]: input })[field] as Address;
}
