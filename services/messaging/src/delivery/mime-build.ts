import { createHash, createPrivateKey, createSign, type KeyObject } from 'node:crypto';
import { domainToASCII } from 'node:url';
import type { Transform } from 'node:stream';
import { Encoder as Base64Encoder } from 'nodemailer/lib/base64';
import MailComposer from 'nodemailer/lib/mail-composer';
import { foldLines } from 'nodemailer/lib/mime-funcs';
import type MimeNode from 'nodemailer/lib/mime-node';
import { Encoder as QpEncoder } from 'nodemailer/lib/qp';
import { dataReady } from './smtp-session.js';
import type { MailMessage } from './smtp-transport.js';

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

/**
 * Builds the MIME message with nodemailer's composer (the same bytes its transports produce) and signs it
 * with its DKIM key, if any (CPU-bound: signing-pool.ts runs it on threads). The signature is computed here
 * over the finished buffer rather than by nodemailer's stream signer, whose parser, transform streams and
 * setImmediate hops cost more CPU per message than the RSA signature itself.
 */
export async function buildMessage(message: MailMessage): Promise<BuiltMessage> {
  const { dkim, ...mail } = message as MailMessage & { dkim?: DkimOptions };
  const node = new MailComposer(mail).compile();
  const envelope = node.getEnvelope() as { from: string | false; to: string[] };
  const unsigned = serialize(node) ?? (await node.build());
  const raw = dkim ? dkimSign(unsigned, dkim) : unsigned;
  return { raw, envelope: { from: envelope.from || '', to: envelope.to }, ready: dataReady(raw) };
}

/** The parts of nodemailer's MimeNode that its own stream writer reads (internal, so checked before use). */
interface MimeParts {
  content?: unknown;
  contentType?: string;
  multipart?: string | false;
  boundary?: string | false;
  childNodes: MimeParts[];
  _raw?: unknown;
  _transforms?: unknown[];
  _processFuncs?: unknown[];
  newline?: unknown;
  buildHeaders(): string;
  getTransferEncoding(): string | false;
}

/**
 * The bytes MimeNode.build() writes, without its streams: for a tree whose contents are all in memory
 * (strings and Buffers: what the delivery worker hands over) the same headers, boundaries and encoders
 * (nodemailer's own, driven synchronously), so the same bytes. Its stream pipeline, a PassThrough per part
 * and a setImmediate per step cost more than the rest of the build. Anything else (streams, paths, URLs,
 * raw parts, transforms) answers null and goes through build().
 */
export function serialize(root: MimeNode): Buffer | null {
  const node = root as unknown as MimeParts;
  if (node._transforms?.length || node._processFuncs?.length || node.newline) return null;
  const out: Buffer[] = [];
  if (!write(node, out)) return null;
  const last = out.length ? out[out.length - 1] : undefined;
  const lastByte = last?.length ? last[last.length - 1] : undefined;
  // MimeNode's LastNewline: the message ends with a line break.
  if (lastByte !== 0x0a) out.push(Buffer.from(lastByte === 0x0d ? '\n' : '\r\n'));
  return Buffer.concat(out);
}

function write(node: MimeParts, out: Buffer[]): boolean {
  if (node._raw) return false;
  if (node.content && typeof node.content !== 'string' && !Buffer.isBuffer(node.content)) return false;
  const content = node.content as string | Buffer | undefined;
  const encoding = node.getTransferEncoding();
  out.push(Buffer.from(`${node.buildHeaders()}\r\n\r\n`));
  if (content) {
    const bytes = typeof content === 'string' ? Buffer.from(content) : content;
    if (encoding === 'base64') encodeInto(new Base64Encoder({}) as unknown as Transform, bytes, out);
    else if (encoding === 'quoted-printable')
      encodeInto(
        new QpEncoder({ binary: !/^text\//i.test(node.contentType || '') } as never) as unknown as Transform,
        bytes,
        out,
      );
    else out.push(bytes);
  }
  if (node.multipart) {
    for (const [i, child] of node.childNodes.entries()) {
      out.push(Buffer.from(`${i > 0 ? '\r\n' : ''}--${node.boundary}\r\n`));
      if (!write(child, out)) return false;
    }
    out.push(Buffer.from(`\r\n--${node.boundary}--\r\n`));
  }
  return true;
}

/** Runs one of nodemailer's encoder transforms over one chunk, as a single write then end would. */
function encodeInto(encoder: Transform, bytes: Buffer, out: Buffer[]): void {
  const push = (chunk: Buffer | string | null, enc?: BufferEncoding) => {
    if (chunk !== null) out.push(typeof chunk === 'string' ? Buffer.from(chunk, enc) : chunk);
    return true;
  };
  const steps = encoder as unknown as {
    push: typeof push;
    _transform(chunk: Buffer, enc: string, done: (err?: Error | null) => void): void;
    _flush(done: (err?: Error | null) => void): void;
  };
  steps.push = push;
  const fail = (err?: Error | null) => {
    if (err) throw err;
  };
  steps._transform(bytes, 'buffer', fail);
  steps._flush(fail);
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
    `d=${domainToASCII(clean(dkim.domainName)) || clean(dkim.domainName).toLowerCase()}`,
    'q=dns/txt',
    `s=${clean(dkim.keySelector)}`,
    `bh=${bodyHash}`,
    `h=${names.join(':')}`,
  ].join('; ');
  const header = `${foldLines(`DKIM-Signature: ${tags}`, 76)};\r\n b=`;
  canonical += `dkim-signature:${relaxedValue(header.slice(header.indexOf(':') + 1))}`;
  const signature = createSign('RSA-SHA256').update(canonical, 'latin1').sign(signingKey(dkim.privateKey), 'base64');
  const field = header + signature.replace(/(^.{73}|.{75}(?!\r?\n|\r))/g, '$&\r\n ').trim();
  return Buffer.concat([Buffer.from(`${field}\r\n`, 'latin1'), raw]);
}

function relaxedValue(value: string): string {
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

/**
 * The base64 SHA-256 of the body's relaxed canonicalisation (RFC 6376 3.4.4): whitespace at the end of a
 * line dropped, runs of whitespace inside a line made one space, empty lines at the end ignored, and a
 * non-empty body ending with CRLF. Bare LFs count as line ends, as in nodemailer's signer.
 */
export function relaxedBodyHash(body: Buffer): string {
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
