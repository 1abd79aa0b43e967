import { createHash, createPrivateKey, randomUUID, sign, type KeyObject } from 'node:crypto';
import { domainToASCII, domainToUnicode } from 'node:url';
import {
  base64Lines,
  crlfLines,
  displayName,
  foldHeader,
  headerName,
  headerParam,
  headerText,
  nameParam,
  quotedPrintable,
  textEncoding,
} from './mime-encode.js';
import { dataReady } from './smtp-session.js';

/** An address as a bare `local@domain` or with a display name. */
export type MailAddress = string | { name?: string; address: string };

export interface MailAttachment {
  filename: string;
  content: Uint8Array | string;
  /** `type/subtype` (checked by the send request's schema). */
  contentType: string;
  contentDisposition?: 'attachment' | 'inline';
  /** Content-ID without angle brackets: an inline part the HTML shows through `cid:`. */
  cid?: string;
}

/** What the delivery worker hands to the builder for one recipient. */
export interface MailMessage {
  messageId?: string;
  from: MailAddress;
  to: MailAddress;
  replyTo?: MailAddress;
  subject?: string;
  text?: string;
  html?: string;
  /** Caller and platform headers (List-Unsubscribe, X-Email-Id, ...): never addressing or Content-* ones. */
  headers?: Record<string, string>;
  attachments?: MailAttachment[];
  dkim?: DkimOptions;
}

/** A message ready for the wire: the MIME bytes (DKIM-signed when the message names a key) and the SMTP envelope. */
export interface BuiltMessage {
  raw: Buffer;
  envelope: { from: string; to: string[] };
  /** `raw` needs no dot-stuffing or line-end repair for SMTP DATA (checked here, off the main thread). */
  ready?: boolean;
}

export interface DkimOptions {
  domainName: string;
  keySelector: string;
  privateKey: string;
}

// Decoding a PEM private key costs several times the RSA signature itself under OpenSSL 3, so
// each key is decoded once per thread. Few keys (one per sender domain); the cap bounds a bad day.
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 1000;

function signingKey(pem: string): KeyObject {
  let key = keys.get(pem);
  if (!key) {
    key = createPrivateKey(pem);
    if (keys.size >= MAX_KEYS) keys.clear();
    keys.set(pem, key);
  }
  return key;
}

// Domains in A-labels (and back to U-labels), worked out once per domain: few senders, recipients' domains repeat.
const asciiDomains = new Map<string, string>();
const unicodeDomains = new Map<string, string>();
const MAX_DOMAINS = 10_000;

function cached(map: Map<string, string>, key: string, convert: (key: string) => string): string {
  let value = map.get(key);
  if (value === undefined) {
    value = convert(key);
    if (map.size >= MAX_DOMAINS) map.clear();
    map.set(key, value);
  }
  return value;
}

const asciiDomain = (domain: string) => cached(asciiDomains, domain, domainToASCII);
const unicodeDomain = (domain: string) => cached(unicodeDomains, domain, domainToUnicode);

// Header field names as written, by the caller's key: the same few on every message (List-Unsubscribe, X-Email-Id).
const headerNames = new Map<string, string>();
const fieldName = (key: string) => cached(headerNames, key, headerName);

/**
 * Builds the MIME message (the structure nodemailer's composer gave it: text and html as multipart/alternative,
 * inline parts with the html in multipart/related, attachments in multipart/mixed) and signs it with its DKIM
 * key, if any. CPU-bound: signing-pool.ts runs it on threads. Every line ends in CRLF and none is longer than
 * 76 characters but a header with a longer word, so the bytes usually go into SMTP DATA as they are.
 */
export async function buildMessage(message: MailMessage): Promise<BuiltMessage> {
  const unsigned = composeMessage(message);
  const raw = message.dkim ? dkimSign(unsigned, message.dkim) : unsigned;
  return { raw, envelope: envelopeOf(message), ready: dataReady(raw) };
}

export function envelopeOf(message: MailMessage): { from: string; to: string[] } {
  return { from: addressOf(message.from), to: [addressOf(message.to)] };
}

/** The message without a signature, a Date of now and random boundaries. */
export function composeMessage(message: MailMessage, date = new Date()): Buffer {
  const head: string[] = [];
  for (const [key, value] of Object.entries(message.headers ?? {})) {
    const name = fieldName(key);
    const text = headerText(String(value ?? ''));
    if (name && text.trim()) head.push(foldHeader(`${name}: ${text}`));
  }
  head.push(foldHeader(`From: ${addressField(message.from)}`));
  head.push(foldHeader(`To: ${addressField(message.to)}`));
  if (message.replyTo) head.push(foldHeader(`Reply-To: ${addressField(message.replyTo)}`));
  if (message.subject) head.push(foldHeader(`Subject: ${headerText(message.subject)}`));
  head.push(`Message-ID: ${messageIdField(message)}`);
  head.push(`Date: ${dateField(date)}`);
  head.push('MIME-Version: 1.0');
  const out: string[] = [];
  // randomUUID draws from a cached pool of random bytes; randomBytes(8) made a call into OpenSSL per message.
  const base = randomUUID().replace(/-/g, '').slice(0, 16);
  writePart(structure(message), head, out, { base, next: 1 });
  const raw = out.join('');
  // A message ends with a line break (RFC 5322 2.1).
  return Buffer.from(raw.endsWith('\n') ? raw : `${raw}\r\n`);
}

// The Date field of the current second: messages built in the same second share it.
let dateSecond = Number.NaN;
let dateText = '';

function dateField(date: Date): string {
  const second = Math.floor(date.getTime() / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = date.toUTCString().replace(/GMT/, '+0000');
  }
  return dateText;
}

/** A MIME part: a leaf with its content, or a multipart of parts. */
type Part =
  | { kind: 'text'; type: 'text/plain' | 'text/html'; content: string }
  | { kind: 'file'; file: MailAttachment }
  | { kind: 'multi'; subtype: 'mixed' | 'alternative' | 'related'; parts: Part[] };

/** nodemailer's tree for the same message (mail-composer's compile), so clients show the same thing. */
function structure(message: MailMessage): Part {
  const text: Part | undefined = message.text ? { kind: 'text', type: 'text/plain', content: message.text } : undefined;
  const html: Part | undefined = message.html ? { kind: 'text', type: 'text/html', content: message.html } : undefined;
  const files = message.attachments ?? [];
  // Parts the html shows by Content-ID go with it in multipart/related; only when there is html.
  const related = html ? files.filter((f) => f.cid).map((file): Part => ({ kind: 'file', file })) : [];
  const attached = files.filter((f) => !html || !f.cid).map((file): Part => ({ kind: 'file', file }));
  const body: Part | undefined = related.length
    ? { kind: 'multi', subtype: 'related', parts: [html as Part, ...related] }
    : html;
  const view: Part | undefined =
    text && body ? { kind: 'multi', subtype: 'alternative', parts: [text, body] } : (body ?? text);
  if (attached.length > 1 || (view && attached.length === 1))
    return { kind: 'multi', subtype: 'mixed', parts: view ? [view, ...attached] : attached };
  return view ?? attached[0] ?? { kind: 'text', type: 'text/plain', content: '' };
}

/** Writes a part after its headers (`head`, to which it adds its own). Leaves end without a line break. */
function writePart(part: Part, head: string[], out: string[], boundaries: { base: string; next: number }): void {
  if (part.kind === 'multi') {
    const boundary = `--_NmP-${boundaries.base}-Part_${boundaries.next++}`;
    const related = part.subtype === 'related' ? ' type="text/html";' : '';
    head.push(foldHeader(`Content-Type: multipart/${part.subtype};${related} boundary="${boundary}"`));
    out.push(head.join('\r\n'), '\r\n\r\n');
    // The CRLF before each delimiter belongs to the delimiter (RFC 2046 5.1.1), not to the part before it.
    for (const [i, child] of part.parts.entries()) {
      out.push(i ? `\r\n--${boundary}\r\n` : `--${boundary}\r\n`);
      writePart(child, [], out, boundaries);
    }
    out.push(`\r\n--${boundary}--\r\n`);
    return;
  }
  if (part.kind === 'text') {
    const encoding = textEncoding(part.content);
    head.push(`Content-Type: ${part.type}; charset=utf-8`, `Content-Transfer-Encoding: ${encoding}`);
    out.push(head.join('\r\n'), '\r\n\r\n');
    if (encoding === '7bit') out.push(crlfLines(part.content));
    else if (encoding === 'quoted-printable') out.push(quotedPrintable(part.content));
    else out.push(base64Lines(Buffer.from(part.content)));
    return;
  }
  const { file } = part;
  const type = file.contentType.replace(/[\x00-\x1f\x7f;]/g, '').trim() || 'application/octet-stream';
  head.push(foldHeader(`Content-Type: ${type}; ${nameParam(file.filename)}`));
  if (file.cid) head.push(`Content-ID: <${file.cid.replace(/[<>\x00-\x1f\x7f]/g, '')}>`);
  head.push('Content-Transfer-Encoding: base64');
  const disposition = file.contentDisposition ?? (file.cid && /^image\//i.test(type) ? 'inline' : 'attachment');
  head.push(foldHeader(`Content-Disposition: ${disposition}; ${headerParam('filename', file.filename)}`));
  out.push(head.join('\r\n'), '\r\n\r\n');
  const content = file.content;
  if (content.length) out.push(base64Lines(typeof content === 'string' ? Buffer.from(content) : content));
}

function addressOf(address: MailAddress): string {
  return normalizeAddress(typeof address === 'string' ? address : address.address);
}

function addressField(address: MailAddress): string {
  const email = addressOf(address);
  const name = typeof address === 'string' ? '' : (address.name ?? '');
  if (name) return `${displayName(name.replace(/\r?\n|\r/g, ' '))} <${email}>`;
  return PLAIN_ADDRESS.test(email) ? email : `<${email}>`;
}

// An address with no specials is written bare, anything else in angle brackets.
const PLAIN_ADDRESS = /^[^\s"(),:;<>@[\\\]]+@[^\s"(),:;<>@[\\\]]+$/;
// RFC 5321 atext plus the non-ASCII of SMTPUTF8: a local part of these (dot-separated) goes unquoted.
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~\u0080-\uffff]+(?:\.[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~\u0080-\uffff]+)*$/;
const QUOTED_STRING = /^"(?:[^"\\]|\\[\s\S])*"$/;

/** The domain in A-labels (U-labels with a non-ASCII local part: SMTPUTF8), the local part quoted if it must be. */
function normalizeAddress(raw: string): string {
  const address = raw.replace(/[\x00-\x1f\x7f<>]+/g, ' ').trim();
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  let local = address.slice(0, at);
  if (!DOT_ATOM.test(local) && !QUOTED_STRING.test(local)) local = `"${local.replace(/["\\]/g, '\\$&')}"`;
  const domain = address.slice(at + 1);
  const ascii = asciiDomain(domain);
  const utf8 = /[\u0080-\uffff]/.test(local);
  return `${local}@${(ascii && (utf8 ? unicodeDomain(ascii) : ascii)) || domain.toLowerCase()}`;
}

function messageIdField(message: MailMessage): string {
  let id = (message.messageId ?? '').replace(/\r?\n|\r/g, ' ').replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, '');
  if (!id) id = `<${randomUUID()}@${addressOf(message.from).split('@').pop() || 'localhost'}>`;
  if (!id.startsWith('<')) id = `<${id}`;
  if (!id.endsWith('>')) id = `${id}>`;
  return id;
}

// The fields nodemailer signs by default (RFC 4871 section 5.5 and list headers), in its order.
const SIGNED_FIELDS = (
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:' +
  'Content-ID:Content-Description:Resent-Date:Resent-From:Resent-Sender:Resent-To:Resent-Cc:' +
  'Resent-Message-ID:In-Reply-To:References:List-Id:List-Help:List-Unsubscribe:List-Subscribe:List-Post:' +
  'List-Owner:List-Archive:OTP-Token'
)
  .toLowerCase()
  .split(':');

/**
 * Prepends a DKIM-Signature (rsa-sha256, relaxed/relaxed) to a whole message, as nodemailer's signer does:
 * the same tags, field list and folding, so a receiver sees the same header either way.
 */
export function dkimSign(raw: Buffer, dkim: DkimOptions): Buffer {
  const split = headerEnd(raw);
  const head = raw.toString('latin1', 0, split.headers);
  const bodyHash = relaxedBodyHash(raw.subarray(split.body));

  // Relaxed header canonicalisation (RFC 6376 3.4.2) of the last instance of each signed field.
  const fields = new Map<string, string>();
  for (const line of head.split(/\r?\n(?![ \t])/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const key = line
      .slice(0, colon)
      .replace(/^[ \t]+|[ \t]+$/g, '')
      .toLowerCase();
    fields.set(key, line.slice(colon + 1));
  }
  const names: string[] = [];
  let canonical = '';
  for (const name of SIGNED_FIELDS) {
    const value = fields.get(name);
    if (value === undefined) continue;
    names.push(name);
    canonical += `${name}:${relaxedValue(value)}\r\n`;
  }
  const clean = (v: string) => v.replace(/[\x00-\x1f\x7f;=]/g, '');
  const tags = [
    'v=1',
    'a=rsa-sha256',
    'c=relaxed/relaxed',
    `d=${asciiDomain(clean(dkim.domainName)) || clean(dkim.domainName).toLowerCase()}`,
    'q=dns/txt',
    `s=${clean(dkim.keySelector)}`,
    `bh=${bodyHash}`,
    `h=${names.join(':')}`,
  ].join('; ');
  const header = `${foldHeader(`DKIM-Signature: ${tags}`)};\r\n b=`;
  canonical += `dkim-signature:${relaxedValue(header.slice(header.indexOf(':') + 1))}`;
  // RSASSA-PKCS1-v1_5 with SHA-256 (the default padding of an RSA key), as createSign('RSA-SHA256') without its stream.
  const signature = sign('sha256', Buffer.from(canonical, 'latin1'), signingKey(dkim.privateKey)).toString('base64');
  const field = header + foldSignature(signature);
  return Buffer.concat([Buffer.from(`${field}\r\n`, 'latin1'), raw]);
}

/** The base64 signature in lines: 73 characters on the `b=` line, then 75 on each continuation line. */
export function foldSignature(signature: string): string {
  if (signature.length <= 73) return signature;
  let out = signature.slice(0, 73);
  for (let i = 73; i < signature.length; i += 75) out += `\r\n ${signature.slice(i, i + 75)}`;
  return out;
}

// A header value relaxed canonicalisation leaves alone but for the one space after the colon.
const RELAXED_AS_IT_IS = /^ ?[^ \t\r\n](?:[^\t\r\n ]| (?! |$))*$/;

function relaxedValue(value: string): string {
  if (RELAXED_AS_IT_IS.test(value)) return value[0] === ' ' ? value.slice(1) : value;
  return value
    .replace(/\r?\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
}

/** Where the header block ends (before its blank line) and where the body starts. */
function headerEnd(raw: Buffer): { headers: number; body: number } {
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== 0x0a) continue;
    if (raw[i + 1] === 0x0a) return { headers: i, body: i + 2 };
    if (raw[i + 1] === 0x0d && raw[i + 2] === 0x0a) return { headers: i - (raw[i - 1] === 0x0d ? 1 : 0), body: i + 3 };
  }
  return { headers: raw.length, body: raw.length };
}

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const TAB = 0x09;
const CRLF_BYTES = Buffer.from('\r\n');

/**
 * True when relaxed canonicalisation changes no line of `body` (found with native scans, as most built bodies
 * are): every line ends in CRLF but maybe the last, no tab, no run of spaces, no space at the end of a line.
 */
function relaxedAsItIs(body: Buffer): boolean {
  if (body.indexOf(TAB) >= 0 || body.indexOf('  ') >= 0 || body.indexOf(' \r') >= 0) return false;
  if (body.length && body[body.length - 1] === SP) return false;
  for (let i = body.indexOf(LF); i >= 0; i = body.indexOf(LF, i + 1)) if (i === 0 || body[i - 1] !== CR) return false;
  for (let i = body.indexOf(CR); i >= 0; i = body.indexOf(CR, i + 1)) if (body[i + 1] !== LF) return false;
  return true;
}

/**
 * The base64 SHA-256 of the body's relaxed canonicalisation (RFC 6376 3.4.4): whitespace at the end of a
 * line dropped, runs of whitespace inside a line made one space, empty lines at the end ignored, and a
 * non-empty body ending with CRLF. Bare LFs count as line ends, as in nodemailer's signer.
 */
export function relaxedBodyHash(body: Buffer): string {
  if (relaxedAsItIs(body)) {
    // Only the empty lines at the end go (and a CRLF comes to a last line without one).
    let end = body.length;
    while (end >= 2 && body[end - 2] === CR && body[end - 1] === LF) end -= 2;
    const hash = createHash('sha256');
    if (end) hash.update(body.subarray(0, end)).update(CRLF_BYTES);
    return hash.digest('base64');
  }
  return bytewiseRelaxedBodyHash(body);
}

/** relaxedBodyHash through the byte loop, for any body (exported for the test that holds the fast path to it). */
export function bytewiseRelaxedBodyHash(body: Buffer): string {
  // Each input byte yields at most two (a lone LF becomes CRLF), plus the CRLF a body may lack at its end.
  const out = Buffer.allocUnsafe(body.length * 2 + 2);
  let n = 0;
  // Where the last line with content ended: the empty lines after it are not part of the canonical body.
  let end = 0;
  let hasContent = false;
  let pendingWsp = false;
  let emptyLines = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === LF || (c === CR && body[i + 1] === LF)) {
      if (c === CR) i++;
      if (hasContent) {
        out[n++] = CR;
        out[n++] = LF;
        end = n;
        hasContent = false;
      } else emptyLines++;
      pendingWsp = false;
    } else if (c === SP || c === TAB) {
      pendingWsp = true;
    } else {
      if (!hasContent) {
        // Empty lines followed by content belong to the body.
        for (; emptyLines > 0; emptyLines--) {
          out[n++] = CR;
          out[n++] = LF;
        }
        hasContent = true;
      }
      if (pendingWsp) {
        out[n++] = SP;
        pendingWsp = false;
      }
      out[n++] = c;
    }
  }
  if (hasContent) {
    out[n++] = CR;
    out[n++] = LF;
    end = n;
  }
  return createHash('sha256').update(out.subarray(0, end)).digest('base64');
}
