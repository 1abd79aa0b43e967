import { createHash } from 'node:crypto';
import { randomText, seededRandom } from '@svc/lib/test-random';
import { type AddressObject, simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { buildMessage, composeMessage, dkimSign, envelopeOf, relaxedBodyHash } from './mime-build.js';
import { dataReady } from './smtp-session.js';
import type { MailMessage } from './smtp-transport.js';
import { testDkimKey } from './test-dkim-key.js';

const domain = 'build.test';
const selector = 'sel';
const { privateKey, verify } = testDkimKey(domain, selector);
const dkim = { domainName: domain, keySelector: selector, privateKey };

const sha = (s: string) => createHash('sha256').update(s, 'latin1').digest('base64');

describe('relaxedBodyHash', () => {
  test.each([
    ['an empty body', '', ''],
    ['only empty lines', '\r\n\r\n', ''],
    ['trailing whitespace and runs inside a line', 'a  b \t\r\nc\t\r\n', 'a b\r\nc\r\n'],
    ['empty lines at the end are ignored, inside kept', 'a\r\n\r\n \r\nb\r\n\r\n\r\n', 'a\r\n\r\n\r\nb\r\n'],
    ['no line break at the end', 'a b', 'a b\r\n'],
    ['bare LF line ends and a lone CR as content', 'a\nb\rc\n', 'a\r\nb\rc\r\n'],
  ])('%s', (_, body, canonical) => {
    expect(relaxedBodyHash(Buffer.from(body, 'latin1'))).toBe(sha(canonical));
  });
});

describe('buildMessage', () => {
  test('a personalised message with attachments, non-ASCII names and list headers verifies', async () => {
    const message: MailMessage = {
      messageId: `<m1@${domain}>`,
      from: { name: 'Nöel from Café', address: `news@${domain}` },
      to: { name: 'Zoë Reader', address: 'zoe@example.org' },
      replyTo: `help@${domain}`,
      subject: 'Grüße, Zoë: your plan is ready — 50% off',
      html: `<p>Hello Zoë,</p>\n<p>${'A long line with trailing spaces   '.repeat(20)}</p>\n\n\n`,
      text: `Hello Zoë,\n\n${'word  '.repeat(100)}\n\n.\n..leading dots\n`,
      headers: { 'List-Unsubscribe': `<https://${domain}/u/1>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
      attachments: [{ filename: 'ü.txt', content: Buffer.from('attached bytes'), contentType: 'text/plain' }],
      dkim,
    };
    const built = await buildMessage(message);
    expect(built.envelope).toEqual({ from: `news@${domain}`, to: ['zoe@example.org'] });
    expect(built.raw.toString('latin1')).toMatch(
      /^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=build\.test;/,
    );
    const [result] = await verify(built.raw);
    expect(result).toMatchObject({ signingDomain: domain, status: { result: 'pass' } });
    const parsed = await simpleParser(built.raw);
    expect(parsed.subject).toBe(message.subject);
    expect(parsed.text?.trim()).toBe((message.text as string).trim());
    expect(parsed.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([['ü.txt', 'attached bytes']]);
    expect(built.raw.toString('latin1')).toContain(`\r\nList-Unsubscribe: <https://${domain}/u/1>\r\n`);
    // The signed fields are the ones present of nodemailer's default list.
    const h = /\bh=([^;]+);/.exec(built.raw.toString('latin1').replace(/\r\n /g, ''))?.[1];
    expect(h).toBe('from:reply-to:subject:date:message-id:to:mime-version:content-type:list-unsubscribe');
  });

  test('a message without a key is not signed; a changed body no longer verifies once signed', async () => {
    const plain = await buildMessage({
      from: `a@${domain}`,
      to: 'b@example.org',
      subject: 'plain',
      text: 'hi',
    });
    expect(plain.raw.toString('latin1')).not.toContain('DKIM-Signature');
    const signed = dkimSign(plain.raw, dkim);
    expect((await verify(signed))[0].status.result).toBe('pass');
    const tampered = Buffer.from(signed.toString('latin1').replace(/hi\r\n$/, 'ho\r\n'), 'latin1');
    // mailauth answers `neutral` ("body hash did not verify") for a body that no longer matches.
    expect((await verify(tampered))[0].status.result).not.toBe('pass');
  });
});

/** RFC 2047 words decoded, for headers mailparser leaves as they are (the ones it does not know). */
function decodeWords(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const bytes = (kind: string, text: string) =>
    kind.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64')
      : Buffer.from(
          text
            .replace(/_/g, ' ')
            .replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
          'latin1',
        );
  return value
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?UTF-8\?([QB])\?([^?]*)\?=/gi, (_, kind: string, text: string) => bytes(kind, text).toString());
}

// What a recipient's client reads of a message: the fields mailparser gives, SMTP's line-end repair applied
// (nodemailer left bare LFs in 7bit and quoted-printable bodies; the transport made them CRLF on the wire).
async function seen(raw: Buffer) {
  const wire = Buffer.from(raw.toString('latin1').replace(/\r\n|\r|\n/g, '\r\n'), 'latin1');
  const p = await simpleParser(wire);
  const header = (name: string) => p.headers.get(name);
  return {
    subject: p.subject,
    from: p.from?.value,
    to: (p.to as AddressObject | undefined)?.value,
    replyTo: p.replyTo?.value,
    messageId: p.messageId,
    listUnsubscribe: p.headerLines.filter((h) => h.key.startsWith('list-')).map((h) => h.line),
    custom: ['x-custom', 'x-message-id', 'precedence'].map((name) => decodeWords(header(name))),
    contentType: (header('content-type') as { value: string }).value,
    text: p.text,
    html: p.html,
    attachments: p.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      disposition: a.contentDisposition,
      cid: a.cid,
      related: a.related,
      content: a.content.toString('base64'),
    })),
  };
}

const long = 'Grüße, a long line with trailing spaces and = signs   '.repeat(12);
const cases: [string, MailMessage][] = [
  ['html and text', { from: 'a@x.test', to: 'b@y.test', subject: 'Hi', html: '<p>Hi</p>', text: 'Hi' }],
  ['text only, 8-bit and long lines', { from: 'a@x.test', to: 'b@y.test', subject: 'Zoë', text: `${long}\n.\n` }],
  ['html only, a lone CR and trailing blanks', { from: 'a@x.test', to: 'b@y.test', html: `<b>x</b>\r \n\r${long}  ` }],
  ['no body at all', { from: 'a@x.test', to: 'b@y.test', subject: 'empty' }],
  [
    'mostly non-Latin text (base64 body and B-encoded words), quotes and =? in a subject',
    {
      from: { name: 'Отдел "продаж"', address: 'a@x.test' },
      to: { name: 'Jo "Q" Public', address: 'b@y.test' },
      subject: 'Привет, мир! Ваш заказ готов =?utf-8?q?x?= "ok"',
      text: 'Привет, мир!\nВаш заказ готов.\n'.repeat(20),
      html: '<p>Привет</p>',
    },
  ],
  [
    'long ASCII lines: a 7bit part needs lines of at most 76 characters',
    {
      from: 'a@x.test',
      to: 'b@y.test',
      subject: `${'word '.repeat(40)}end`,
      text: `${'x'.repeat(300)}\n${'a b '.repeat(100)}\n`,
      html: `<a href="https://example.com/${'p'.repeat(200)}">link</a>`,
    },
  ],
  [
    'attachments in memory, inline parts, list headers, reply-to, display names',
    {
      messageId: '<m2@x.test>',
      from: { name: 'Nöel', address: 'a@x.test' },
      to: { name: 'Zoë, Reader', address: 'b@y.test' },
      replyTo: 'r@x.test',
      subject: `${long}`,
      html: `<p>${long}</p><img src="cid:logo@x">`,
      text: long,
      headers: {
        'List-Unsubscribe': `<https://x.test/u/${'1'.repeat(90)}>, <mailto:unsubscribe@x.test?subject=u>`,
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
        'x-custom': 'é',
        'X-Message-Id': 'plain',
        Precedence: 'bulk',
      },
      attachments: [
        {
          filename: 'a.bin',
          content: new Uint8Array([0, 1, 2, 255, 13, 10, 46]),
          contentType: 'application/octet-stream',
        },
        { filename: 'ü.txt', content: Buffer.from('text\r\n.\r\n'), contentType: 'text/plain' },
        { filename: 'logo.png', content: Buffer.alloc(300, 7), contentType: 'image/png', cid: 'logo@x' },
        {
          filename: 'c.png',
          content: Buffer.alloc(5, 1),
          contentType: 'image/png',
          cid: 'c@x',
          contentDisposition: 'inline',
        },
        {
          filename: `a "quoted"; long name ${'é'.repeat(40)} (1).pdf`,
          content: Buffer.alloc(2000, 3),
          contentType: 'application/pdf',
        },
        { filename: `${'long-ascii-name-'.repeat(6)}.txt`, content: Buffer.from('x'), contentType: 'text/plain' },
      ],
    },
  ],
  [
    'one attachment and no body; a Unicode domain',
    {
      from: 'a@bücher.test',
      to: 'b@y.test',
      attachments: [{ filename: 'only.txt', content: Buffer.from('only'), contentType: 'text/plain' }],
    },
  ],
  [
    'text with an inline part and no html: the part is attached',
    {
      from: 'a@x.test',
      to: 'b@y.test',
      text: 'see attached',
      attachments: [{ filename: 'i.png', content: Buffer.alloc(10, 2), contentType: 'image/png', cid: 'i@x' }],
    },
  ],
];

describe('composeMessage', () => {
  test.each(cases)('%s: a client reads the same message as from nodemailer', async (_, message) => {
    const ours = composeMessage(message);
    const theirs = await new MailComposer(message as never).compile().build();
    const [a, b] = await Promise.all([seen(ours), seen(theirs)]);
    // Both make a Message-ID when none is given: random either way.
    if (!message.messageId) a.messageId = b.messageId;
    expect(a).toEqual(b);
    expect(envelopeOf(message)).toEqual(new MailComposer(message as never).compile().getEnvelope());
  });

  test.each(cases)('%s: CRLF line ends, no line over 78 characters but a long word, ready for DATA', (_, message) => {
    const raw = composeMessage(message).toString('latin1');
    expect(raw.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    expect(raw.endsWith('\r\n')).toBe(true);
    const [head, ...body] = raw.split('\r\n\r\n');
    for (const line of head.split('\r\n')) if (/\s/.test(line.trim())) expect(line.length).toBeLessThanOrEqual(78);
    for (const line of body.join('\r\n\r\n').split('\r\n')) {
      // Body lines: quoted-printable and base64 at most 76, and the message's own part headers.
      if (!line.startsWith('Content-') && !line.startsWith(' ')) expect(line.length).toBeLessThanOrEqual(76);
    }
    expect(dataReady(Buffer.from(raw, 'latin1')) || /\n\./.test(raw)).toBe(true);
  });
});

describe('buildMessage signatures', () => {
  test.each(cases)('%s: the DKIM signature verifies', async (_, message) => {
    const built = await buildMessage({ ...message, dkim });
    const [result] = await verify(built.raw);
    expect(result).toMatchObject({ signingDomain: domain, status: { result: 'pass' } });
    expect(built.envelope).toEqual(envelopeOf(message));
  });
});

describe('composeMessage against nodemailer on random text', () => {
  // A fixed-seed generator, so a failure names a message that can be built again.
  const random = seededRandom(42);
  const pieces = [
    'a',
    'Zo',
    ' ',
    '  ',
    '\t',
    '"',
    '\\',
    '=',
    '=?',
    '?=',
    '_',
    '.',
    ',',
    ';',
    '<',
    '>',
    '(',
    ')',
    '@',
    ':',
    'é',
    'ß',
    '—',
    'ж',
    '中文',
    '😀',
    '\n',
    '\r\n',
    '\r',
    '\n.\n',
    'word ',
    'https://example.com/x?y=1&z=2 ',
  ];
  const text = (max: number) => randomText(random, pieces, max);
  const line = (max: number) => text(max).replace(/[\r\n]/g, ' ');

  test.each(Array.from({ length: 40 }, (_, i) => i))('random message %i reads the same', async () => {
    const message: MailMessage = {
      messageId: '<r@x.test>',
      from: { name: line(12).trim(), address: 'a@x.test' },
      to: { name: line(12).trim(), address: 'b@y.test' },
      subject: line(60),
      text: text(200),
      html: random() < 0.7 ? `<p>${text(300)}</p>` : undefined,
      headers: { 'X-Custom': line(40) },
      attachments:
        random() < 0.5
          ? [
              {
                filename: `${line(30).replace(/[\t/\\]/g, '') || 'f'}.txt`,
                content: Buffer.from(text(50)),
                contentType: 'text/plain',
              },
            ]
          : [],
    };
    const [a, b] = await Promise.all([
      seen(composeMessage(message)),
      seen(await new MailComposer(message as never).compile().build()),
    ]);
    expect(a).toEqual(b);
  });
});
