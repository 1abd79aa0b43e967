import { addTracking } from './tracking-html.js';

const rewrite = (html: string, skip: string[] = []) =>
  addTracking(html, {
    pixelUrl: 'https://t/o/P',
    clickUrl: (url) => (skip.includes(url) ? undefined : `https://t/c/${encodeURIComponent(url)}`),
  });

describe('open and click tracking in HTML', () => {
  test('http(s) links become redirects carrying the original URL, entities decoded', () => {
    const out = rewrite('<a class="x" href="https://a.example/p?x=1&amp;y=2">A</a> <a href=\'http://b.example\'>B</a>');
    expect(out).toContain(`href="https://t/c/${encodeURIComponent('https://a.example/p?x=1&y=2')}"`);
    expect(out).toContain(`href='https://t/c/${encodeURIComponent('http://b.example')}'`);
  });

  test('numeric character references in a link are decoded as a browser decodes them', () => {
    const out = rewrite('<a href="https://a.example/p?x=1&#38;y=2&#x26;z=&quot;3&#X2F;">A</a>');
    expect(out).toContain(`href="https://t/c/${encodeURIComponent('https://a.example/p?x=1&y=2&z="3/')}"`);
  });

  test('an unquoted href is tracked too, written back quoted', () => {
    const out = rewrite('<a href=https://a.example/p?x=1&amp;y=2>A</a> <A class=x HREF=http://b.example/>B</A>');
    expect(out).toContain(`<a href="https://t/c/${encodeURIComponent('https://a.example/p?x=1&y=2')}">A</a>`);
    expect(out).toContain(`<A class=x HREF="https://t/c/${encodeURIComponent('http://b.example/')}">B</A>`);
    expect(rewrite('<a href=mailto:a@b.c>m</a>')).toMatch(/^<a href=mailto:a@b.c>m<\/a><img/);
  });

  test('mailto, tel, anchors and skipped links are left alone', () => {
    const html =
      '<a href="mailto:a@b.c">m</a><a href="tel:1">t</a><a href="#top">h</a><a href="https://keep.example">k</a>';
    const out = rewrite(html, ['https://keep.example']);
    expect(out.replace(/<img[^>]*>$/, '')).toBe(html);
  });

  test('a URL with credentials or one no browser parses is left alone: the platform never redirects there', () => {
    const html =
      '<a href="https://bank.example@evil.example/">a</a><a href="https://u:p@evil.example/">b</a>' +
      '<a href="https://exa mple.com/">c</a><a href="http://[x]/">d</a>';
    expect(rewrite(html).replace(/<img[^>]*>$/, '')).toBe(html);
  });

  test('the pixel goes before </body>, or at the end without one', () => {
    expect(rewrite('<html><body><p>x</p></body></html>')).toMatch(
      /<p>x<\/p><img src="https:\/\/t\/o\/P"[^>]*><\/body><\/html>$/,
    );
    expect(rewrite('<p>x</p>')).toMatch(/^<p>x<\/p><img src="https:\/\/t\/o\/P"/);
  });
});
