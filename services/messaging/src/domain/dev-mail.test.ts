import { emailIdOf, headerLines } from './dev-mail.js';

const id = '0190f5a2-7c3b-7def-8a12-3456789abcde';
const mail = (head: string, body = 'Hello') => Buffer.from(`${head}\r\n\r\n${body}`);

describe('emailIdOf', () => {
  test('reads the X-Email-Id header of the header section', () => {
    expect(emailIdOf(mail(`From: a@x.com\r\nX-Email-Id: ${id}\r\nSubject: Hi`))).toBe(id);
    expect(emailIdOf(mail(`x-email-id:${id.toUpperCase()}`))).toBe(id);
  });

  test('a missing, malformed or repeated header attributes the message to no one', () => {
    expect(emailIdOf(mail('From: a@x.com'))).toBeUndefined();
    expect(emailIdOf(mail('X-Email-Id: not-a-uuid'))).toBeUndefined();
    expect(emailIdOf(mail(`X-Email-Id: ${id}\r\nX-Email-Id: ${id}`))).toBeUndefined();
  });

  test('a header-like line in the body is not a header', () => {
    expect(emailIdOf(mail('From: a@x.com', `X-Email-Id: ${id}`))).toBeUndefined();
  });
});

describe('headerLines', () => {
  test('every header in order, folded lines unfolded, repeats kept, the body left out', () => {
    const raw = mail(
      'DKIM-Signature: v=1; a=rsa-sha256; d=sandbox.localhost;\r\n s=sandbox; bh=abc=;\r\n\tb=xyz\r\n' +
        'Received: one\r\nReceived: two\r\nList-Unsubscribe: <https://x/u/1>,\r\n <mailto:u@x>',
      'Not-A-Header: body',
    );
    expect(headerLines(raw)).toEqual([
      { name: 'DKIM-Signature', value: 'v=1; a=rsa-sha256; d=sandbox.localhost; s=sandbox; bh=abc=; b=xyz' },
      { name: 'Received', value: 'one' },
      { name: 'Received', value: 'two' },
      { name: 'List-Unsubscribe', value: '<https://x/u/1>, <mailto:u@x>' },
    ]);
  });
});
