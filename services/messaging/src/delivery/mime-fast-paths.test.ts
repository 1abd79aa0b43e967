import { createSign } from 'node:crypto';
import { randomText, seededRandom } from '@svc/lib/test-random';
import { bytewiseRelaxedBodyHash, dkimSign, foldSignature, relaxedBodyHash } from './mime-build.js';
import { quotedPrintable, textEncoding } from './mime-encode.js';
import { testDkimKey } from './test-dkim-key.js';

// The builder's cheaper paths (quoted-printable into one buffer, the body hash and header values relaxed canonical
// form leaves alone, the signature folded by slicing) against the straightforward code they replaced, on seeded
// random input: the bytes must be the same.

const random = seededRandom(7);
const pieces = [
  'a',
  'Zo',
  ' ',
  '  ',
  '\t',
  '=',
  '.',
  'é',
  '—',
  '中文',
  '😀',
  '\ud800',
  '\n',
  '\r\n',
  '\r',
  '\r\r\n',
  ' \r\n',
  '\t\n',
  'https://example.com/read?i=297&x=1 ',
  'x'.repeat(80),
];
const text = (max: number) => randomText(random, pieces, max);

// Bytes of a quoted-printable line written as themselves (the encoder's table).
const QP_LITERAL = new Uint8Array(256);
for (let c = 0x21; c <= 0x7e; c++) QP_LITERAL[c] = c === 0x3d ? 0 : 1;
QP_LITERAL[0x20] = 1;
QP_LITERAL[0x09] = 1;
const HEX = '0123456789ABCDEF';

/** The encoder as it was: a string per character. */
function referenceQuotedPrintable(value: string): string {
  let out = '';
  for (const [n, line] of value.split(/\r\n|\n|\r/).entries()) {
    if (n > 0) out += '\r\n';
    const bytes = Buffer.from(line);
    let row = '';
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      const last = i === bytes.length - 1;
      const enc =
        QP_LITERAL[b] && !(last && (b === 0x20 || b === 0x09))
          ? String.fromCharCode(b)
          : `=${HEX[b >> 4]}${HEX[b & 15]}`;
      if (row.length + enc.length > (last ? 76 : 75)) {
        out += `${row}=\r\n`;
        row = '';
      }
      row += enc;
    }
    out += row;
  }
  return out;
}

describe('quotedPrintable', () => {
  test.each([
    ['empty', ''],
    ['a space at the end of each line', 'a \nb\t\r\nc '],
    ['a long line of literals', 'x'.repeat(200)],
    ['a long line of escapes', 'é'.repeat(60)],
    ['an escape at the soft break', `${'x'.repeat(74)}=y`],
    ['line breaks of every kind', 'a\r\n\r\nb\n\nc\r\rd\r\r\ne'],
  ])('%s: as the string encoder wrote it', (_, value) => {
    expect(quotedPrintable(value)).toBe(referenceQuotedPrintable(value));
  });

  test('2,000 random texts: as the string encoder wrote them', () => {
    for (let i = 0; i < 2000; i++) {
      const value = text(120);
      expect([value, quotedPrintable(value)]).toEqual([value, referenceQuotedPrintable(value)]);
    }
  });
});

describe('textEncoding', () => {
  // The patterns the character loop replaced.
  const NOT_7BIT = /[\x00-\x08\x0b\x0c\x0e-\x1f\u0080-\uffff]/;
  const LONG_LINE = /^.{77,}/m;
  const byPatterns = (t: string) => !NOT_7BIT.test(t) && t.length <= 128 * 1024 && !LONG_LINE.test(t);

  test('2,000 random texts, ASCII ones and lines about 76 long: as the patterns chose', () => {
    const ascii = ['a', 'Zo', ' ', '\t', '\x7f', '\x01', '\n', '\r\n', '\r', 'x'.repeat(38), 'y'.repeat(75)];
    for (let i = 0; i < 2000; i++) {
      const t = i % 2 ? text(300) : randomText(random, ascii, 200);
      expect(textEncoding(t) === '7bit').toBe(byPatterns(t));
    }
    for (const n of [75, 76, 77])
      for (const t of ['x'.repeat(n), `a\r\n${'x'.repeat(n)}\r\nb`, `${'x'.repeat(n)}\rb`])
        expect(textEncoding(t) === '7bit').toBe(byPatterns(t));
  });
});

describe('relaxedBodyHash', () => {
  test('2,000 random bodies, and their CRLF forms (which most take the native path): as the byte loop', () => {
    for (let i = 0; i < 2000; i++) {
      const value = text(60);
      for (const body of [Buffer.from(value), Buffer.from(value.replace(/\r\n|\n|\r/g, '\r\n'))])
        expect([value, relaxedBodyHash(body)]).toEqual([value, bytewiseRelaxedBodyHash(body)]);
    }
  });
});

describe('foldSignature', () => {
  test('as the folding pattern cut it, for every length up to 700', () => {
    const b64 = Buffer.alloc(600, 7).toString('base64');
    for (let n = 0; n <= 700; n++) {
      const signature = b64.slice(0, n);
      expect(foldSignature(signature)).toBe(signature.replace(/(^.{73}|.{75}(?!\r?\n|\r))/g, '$&\r\n ').trim());
    }
  });
});

describe('dkimSign', () => {
  const domain = 'fast.test';
  const { privateKey, verify } = testDkimKey(domain, 'sel');
  const dkim = { domainName: domain, keySelector: 'sel', privateKey };

  test('the signature is the one createSign made over the same canonical header', () => {
    const raw = Buffer.from('From: a@fast.test\r\nTo: b@x.test\r\nSubject:  spaced \t out \r\n\r\nbody\r\n');
    const signed = dkimSign(raw, dkim).toString('latin1');
    const field = signed.slice(0, signed.indexOf('\r\nFrom:'));
    const unfolded = field.replace(/\r\n /g, ' ');
    const b = /b=([^;]*)$/.exec(unfolded)![1].replace(/ /g, '');
    const header = field.slice(0, field.indexOf(' b=') + 3);
    const canonical =
      'from:a@fast.test\r\nsubject:spaced out\r\nto:b@x.test\r\n' +
      `dkim-signature:${header
        .slice(header.indexOf(':') + 1)
        .replace(/\r\n/g, '')
        .replace(/[ \t]+/g, ' ')
        .trim()}`;
    expect(b).toBe(createSign('RSA-SHA256').update(canonical, 'latin1').sign(privateKey, 'base64'));
  });

  test('random header values (folded, tabs, runs of spaces, leading and trailing blanks) verify', async () => {
    for (let i = 0; i < 40; i++) {
      const value = () => text(30).replace(/[\r\n]+/g, (m) => (random() < 0.5 ? '\r\n\t' : ' ')) || 'x';
      const raw = Buffer.from(
        `From: a@fast.test\r\nTo: ${value()} <b@x.test>\r\nSubject: ${value()}\r\nList-Unsubscribe:${value()}\r\n` +
          `MIME-Version: 1.0\r\n\r\n${text(40).replace(/\r\n|\n|\r/g, '\r\n')}\r\n`,
        'utf8',
      );
      const [result] = await verify(dkimSign(raw, dkim));
      expect(result).toMatchObject({ signingDomain: domain, status: { result: 'pass' } });
    }
  });
});
