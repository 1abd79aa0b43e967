import { createHash } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { Readable } from 'node:stream';
import MailComposer from 'nodemailer/lib/mail-composer';
import { buildMessage, dkimSign, relaxedBodyHash, serialize } from './mime-build.js';
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

describe('serialize', () => {
  const long = 'Grüße, a long line with trailing spaces and = signs   '.repeat(12);
  test.each<[string, MailMessage]>([
    ['html and text', { from: 'a@x.test', to: 'b@y.test', subject: 'Hi', html: '<p>Hi</p>', text: 'Hi' }],
    ['text only, 8-bit and long lines', { from: 'a@x.test', to: 'b@y.test', subject: 'Zoë', text: `${long}\n.\n` }],
    [
      'html only, a lone CR and trailing blanks',
      { from: 'a@x.test', to: 'b@y.test', html: `<b>x</b>\r \n\r${long}  ` },
    ],
    [
      'attachments in memory, list headers, reply-to, display names',
      {
        from: { name: 'Nöel', address: 'a@x.test' },
        to: { name: 'Zoë, Reader', address: 'b@y.test' },
        replyTo: 'r@x.test',
        subject: `${long}`,
        html: `<p>${long}</p>`,
        text: long,
        headers: { 'List-Unsubscribe': '<https://x.test/u/1>', 'X-Custom': 'é' },
        attachments: [
          {
            filename: 'a.bin',
            content: Buffer.from([0, 1, 2, 255, 13, 10, 46]),
            contentType: 'application/octet-stream',
          },
          { filename: 'ü.txt', content: Buffer.from('text\r\n.\r\n'), contentType: 'text/plain' },
          { filename: 'logo.png', content: Buffer.alloc(300, 7), contentType: 'image/png', cid: 'logo@x' },
        ],
      },
    ],
  ])('%s: the same bytes as MimeNode.build()', async (_, message) => {
    const node = new MailComposer(message).compile();
    const fast = serialize(node);
    expect(fast).not.toBeNull();
    expect(fast?.toString('latin1')).toBe((await node.build()).toString('latin1'));
  });

  test('content that is not in memory goes through build()', async () => {
    const node = new MailComposer({
      from: 'a@x.test',
      to: 'b@y.test',
      text: 'x',
      attachments: [{ filename: 's.txt', content: Readable.from(['streamed']) }],
    }).compile();
    expect(serialize(node)).toBeNull();
    const built = await buildMessage({
      from: 'a@x.test',
      to: 'b@y.test',
      text: 'x',
      attachments: [{ filename: 's.txt', content: Readable.from(['streamed']) }],
    });
    expect(built.raw.toString()).toContain(Buffer.from('streamed').toString('base64'));
  });
});
