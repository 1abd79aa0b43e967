// The encodings a MIME message is written with (RFC 2045, 2047, 2231, 5322), for mime-build.ts. Output lines end
// in CRLF. The choices (which transfer encoding, Q or B words, where lines fold) follow what nodemailer's composer
// did before, so recipients see the same message.

const CRLF = '\r\n';
const HEX = '0123456789ABCDEF';

/** Header folding: lines of at most `width` characters where whitespace allows (RFC 5322 2.2.3). */
export function foldHeader(line: string, width = 76): string {
  if (line.length <= width) return line;
  let out = '';
  let pos = 0;
  while (pos < line.length) {
    let piece = line.slice(pos, pos + width);
    if (piece.length < width) {
      out += piece;
      break;
    }
    // Cut before the last run of whitespace that has text before it, so the next line starts with it;
    // a word longer than the line is kept whole (with the whitespace after it) rather than broken.
    const tail = /(\s+)\S*$/.exec(piece);
    if (tail && tail[0].length < piece.length) piece = piece.slice(0, piece.length - tail[0].length);
    else {
      const rest = /^\S+/.exec(line.slice(pos + piece.length));
      if (rest) piece += rest[0];
    }
    out += piece;
    pos += piece.length;
    if (pos < line.length) out += CRLF;
  }
  return out;
}

/** Q when most of the text is Latin letters, B otherwise: the shorter encoding of the two. */
function wordEncoding(value: string): 'Q' | 'B' {
  let other = 0;
  let latin = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x80 || (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d)) other++;
    else if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)) latin++;
  }
  return other < latin ? 'Q' : 'B';
}

// Characters of a Q-encoded word written as themselves (RFC 2047 5(3)); space is `_`.
const Q_LITERAL = /[A-Za-z0-9!*+\-/]/;
// Encoded text per word: 52 characters for the word, less `=?UTF-8?Q?` and `?=`.
const Q_TEXT = 40;
const B_BYTES = 30;

/**
 * RFC 2047 encoded words for the whole value, as many as needed to keep each short, separated by spaces (where
 * the header folds). A word never splits a character.
 */
function encodedWords(value: string): string {
  const words: string[] = [];
  if (wordEncoding(value) === 'Q') {
    let word = '';
    for (const ch of value) {
      let enc: string;
      if (ch === ' ') enc = '_';
      else if (ch.length === 1 && Q_LITERAL.test(ch)) enc = ch;
      else {
        enc = '';
        for (const b of Buffer.from(ch)) enc += `=${HEX[b >> 4]}${HEX[b & 15]}`;
      }
      if (word && word.length + enc.length > Q_TEXT) {
        words.push(word);
        word = '';
      }
      word += enc;
    }
    if (word || !words.length) words.push(word);
    return words.map((w) => `=?UTF-8?Q?${w}?=`).join(' ');
  }
  let part = '';
  let bytes = 0;
  for (const ch of value) {
    const n = Buffer.byteLength(ch);
    if (part && bytes + n > B_BYTES) {
      words.push(part);
      part = '';
      bytes = 0;
    }
    part += ch;
    bytes += n;
  }
  if (part || !words.length) words.push(part);
  return words.map((w) => `=?UTF-8?B?${Buffer.from(w).toString('base64')}?=`).join(' ');
}

// Text a header carries as it is: printable ASCII without `"` (which nodemailer encoded) and no `=?`, so that no
// receiver reads an encoded word into the sender's own text.
const PLAIN_HEADER_TEXT = /^[\t\x20-\x21\x23-\x7e]*$/;

/** An unstructured header value (Subject, custom headers): line breaks become spaces, the rest encoded if needed. */
export function headerText(value: string): string {
  const text = value.replace(/\r?\n|\r/g, ' ');
  return PLAIN_HEADER_TEXT.test(text) && !text.includes('=?') ? text : encodedWords(text);
}

/** A header field name as nodemailer wrote it: `list-unsubscribe` as `List-Unsubscribe`, `x-id` as `X-ID`. */
export function headerName(key: string): string {
  return key
    .replace(/[\s\x00-\x20\x7f:]/g, '')
    .toLowerCase()
    .replace(/^X-SMTPAPI$|^(MIME|DKIM|ARC|BIMI)\b|^OTP(?=-Token$)|^[a-z]|-(SPF|FBL|ID|MD5)$|-[a-z]/gi, (c) =>
      c.toUpperCase(),
    );
}

const quoted = (s: string) => `"${s.replace(/["\\]/g, '\\$&')}"`;

/** A display name: bare when only word characters and spaces, quoted when printable ASCII, else encoded words. */
export function displayName(name: string): string {
  if (/^[\w ]*$/.test(name)) return name;
  return /^[\x20-\x7e]*$/.test(name) ? quoted(name) : encodedWords(name);
}

// A parameter value that needs no quotes (RFC 2045 token) and one that can go as a quoted string.
const TOKEN_SPECIALS = /[\s'"\\;:/=(),<>@[\]?]|^-/;
const PLAIN_PARAM = /^[\x20-\x21\x23-\x7e]*$/;
const PARAM_SECTION = 50;

/** `name=value` of a Content-Type or Content-Disposition: a token, a quoted string, or RFC 2231 sections. */
export function headerParam(name: string, value: string): string {
  if (PLAIN_PARAM.test(value) && !value.includes('=?') && value.length < 75)
    return `${name}=${!value || TOKEN_SPECIALS.test(value) ? JSON.stringify(value) : value}`;
  // RFC 2231 sections of UTF-8 percent-encoded text, never splitting a character.
  const sections: string[] = [];
  let section = "utf-8''";
  for (const ch of value) {
    const enc = percentEncode(ch);
    if (section.length + enc.length >= PARAM_SECTION && section !== "utf-8''") {
      sections.push(section);
      section = '';
    }
    section += enc;
  }
  sections.push(section);
  return sections.map((s, i) => `${name}*${i}*=${s}`).join('; ');
}

function percentEncode(ch: string): string {
  if (/^[A-Za-z0-9\-_.!~]$/.test(ch)) return ch;
  let out = '';
  for (const b of Buffer.from(ch)) out += `%${HEX[b >> 4]}${HEX[b & 15]}`;
  return out;
}

/** The `name=` of a Content-Type for a filename: encoded words when not ASCII (for clients that ignore RFC 2231). */
export function nameParam(filename: string): string {
  const value = headerText(filename);
  return `name=${value !== filename || TOKEN_SPECIALS.test(value) ? JSON.stringify(value) : value}`;
}

/** Base64 in lines of 76 characters (RFC 2045 6.8) separated by CRLF. */
export function base64Lines(bytes: Uint8Array): string {
  const b64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  if (b64.length <= 76) return b64;
  let out = b64.slice(0, 76);
  for (let i = 76; i < b64.length; i += 76) out += CRLF + b64.slice(i, i + 76);
  return out;
}

/** Text with every line break made CRLF, what SMTP DATA would make of it anyway (RFC 5321 2.3.8). */
export function crlfLines(text: string): string {
  return text.replace(/\r\n|\n|\r/g, CRLF);
}

// Bytes of a quoted-printable line written as themselves: printable ASCII but `=`, and space and tab
// (not at the end of a line).
const QP_LITERAL = new Uint8Array(256);
for (let c = 0x21; c <= 0x7e; c++) QP_LITERAL[c] = c === 0x3d ? 0 : 1;
QP_LITERAL[0x20] = 1;
QP_LITERAL[0x09] = 1;
const QP_WIDTH = 76;

const HEX_CODES = Buffer.from(HEX, 'latin1');

/**
 * Quoted-printable text (RFC 2045 6.7): each line break a CRLF, lines of at most 76 characters with soft breaks
 * (`=` at the end) that never split an `=XX`, whitespace at the end of a line encoded. Written byte by byte into
 * one buffer: a string per character made this most of a message's garbage.
 */
export function quotedPrintable(text: string): string {
  const bytes = Buffer.from(text);
  // Each byte yields at most 3 characters, each 75 of them one soft break (3) more; each line break 2.
  const out = Buffer.allocUnsafe(bytes.length * 4 + 16);
  let n = 0;
  let row = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    // Line breaks (CRLF, LF or CR) become CRLF and start a new row.
    if (b === 0x0d || b === 0x0a) {
      if (b === 0x0d && bytes[i + 1] === 0x0a) i++;
      out[n++] = 0x0d;
      out[n++] = 0x0a;
      row = 0;
      continue;
    }
    const next = bytes[i + 1];
    const last = i === bytes.length - 1 || next === 0x0d || next === 0x0a;
    const literal = QP_LITERAL[b] === 1 && !(last && (b === 0x20 || b === 0x09));
    const width = literal ? 1 : 3;
    // A soft break needs room for its `=`; the line's last piece may use the whole width.
    if (row + width > (last ? QP_WIDTH : QP_WIDTH - 1)) {
      out[n++] = 0x3d;
      out[n++] = 0x0d;
      out[n++] = 0x0a;
      row = 0;
    }
    if (literal) out[n++] = b;
    else {
      out[n++] = 0x3d;
      out[n++] = HEX_CODES[b >> 4];
      out[n++] = HEX_CODES[b & 15];
    }
    row += width;
  }
  return out.toString('latin1', 0, n);
}

/**
 * Content a text part can carry as 7bit: no control characters but tab and line breaks, ASCII only, no line longer
 * than 76 characters. One pass over the characters (two patterns, one of them multi-line, took three times longer).
 */
function sevenBit(text: string): boolean {
  let line = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || c === 0x0d) line = 0;
    else if (c >= 0x80 || (c < 0x20 && c !== 0x09) || ++line > 76) return false;
  }
  return true;
}

/**
 * The transfer encoding of a text part, as nodemailer chose it: 7bit for short-lined ASCII, else quoted-printable
 * when most characters are Latin letters and base64 otherwise.
 */
export function textEncoding(text: string): '7bit' | 'quoted-printable' | 'base64' {
  if (text.length <= 128 * 1024 && sevenBit(text)) return '7bit';
  return wordEncoding(text) === 'Q' ? 'quoted-printable' : 'base64';
}
