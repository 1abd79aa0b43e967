import { htmlToPlainText } from './plain-text.js';

describe('plain-text alternative', () => {
  test('a plain-text alternative is generated from the HTML body', () => {
    expect(htmlToPlainText('<h1>Hello</h1><p>Welcome <b>Ann</b>.</p>')).toBe('HELLO\n\nWelcome Ann.');
  });

  test('links keep their target as "text [url]"', () => {
    expect(htmlToPlainText('<p>Read <a href="https://ex.com/a">the guide</a></p>')).toBe(
      'Read the guide [https://ex.com/a]',
    );
    expect(htmlToPlainText('<a href="https://ex.com">https://ex.com</a>')).toBe('https://ex.com');
  });

  test('images and the tracking pixel are skipped', () => {
    const html =
      '<p>Hi<img src="https://ex.com/logo.png" alt="Logo"></p>' +
      '<img src="https://t.ex.com/o/1.gif" width="1" height="1" alt="">';
    expect(htmlToPlainText(html)).toBe('Hi');
  });

  test('head, style and script content never leak into the text', () => {
    const html =
      '<html><head><title>T</title><style>p{color:red}</style></head>' +
      '<body><script>x()</script><p>Body</p></body></html>';
    expect(htmlToPlainText(html)).toBe('Body');
  });

  test('long paragraphs wrap at 78 characters', () => {
    const lines = htmlToPlainText(`<p>${'word '.repeat(60)}</p>`).split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(78);
  });

  test("names of Object.prototype's members are no entity, block or element of their own", () => {
    // html-to-text threw a TypeError on an element named constructor (a 500 from /v1/send).
    expect(htmlToPlainText('<p>a <constructor>b</constructor> c</p>')).toBe('a b c');
    expect(htmlToPlainText('<CONSTRUCTOR>x</CONSTRUCTOR><table><tr><td><constructor/>y</td></tr></table>')).toBe(
      'x\n\ny',
    );
    // The simple converter printed `function toString() { [native code] }` for `&toString;`.
    expect(htmlToPlainText('<p>a &toString; &constructor; &__proto__; b</p>')).toBe(
      'a &toString; &constructor; &__proto__; b',
    );
    expect(htmlToPlainText('<div>a<toString>b</toString><valueOf>c</valueOf></div>')).toBe('abc');
  });
});
