import { seededRandom } from '@svc/lib/test-random';
import { htmlToPlainText, libraryConversion } from './plain-text.js';
import { simpleHtmlToText } from './simple-html-text.js';

const WORDS = [
  'Hello',
  'reader',
  'Zoë',
  'plan:',
  'free.',
  'a',
  'https://example.com/read?i=1&amp;b=2',
  'x'.repeat(90),
  `${'y'.repeat(40)}undefined${'z'.repeat(40)}`,
  'Tom&amp;Jerry',
  '&lt;tag&gt;',
  'it&#39;s',
  '&#x27;q&#x27;',
  '50&nbsp;%',
  '&quot;quoted&quot;',
  'a < b',
  '1<2',
  '&',
  '& more',
  'ünïcödé',
  '😀',
];
const SPACES = [' ', ' ', '  ', '\n', '\n  ', '\t', '\u200b', '', '', '\u00a0'];
const HREFS = ['https://ex.com/a', 'mailto:ann@ex.com', '#top', '', 'https://ex.com/x y', 'Read', 'HTTPS://EX.COM'];
const BLOCK_TAGS = ['p', 'div', 'h1', 'h2', 'h4', 'section', 'table', 'header', 'footer', 'P', 'DIV'];
const INLINE_TAGS = ['span', 'b', 'strong', 'em', 'i', 'u', 'font', 'td', 'tr', 'th', 'tbody', 'SPAN'];
/** Outside the subset: these go to html-to-text. */
const OTHER = [
  '<ul><li>one</li><li>two</li></ul>',
  '<pre>  kept\n  as is</pre>',
  '<blockquote>quoted</blockquote>',
  '&copy; 2026',
  '&amp',
  '<hr>',
  '</br>',
  '<p>a<div>b</div></p>',
  '<style>p{}</style>',
  '<!DOCTYPE html>',
  '<span>unclosed',
  '</b>',
  '<wbr>',
  '&#128;',
];

function html(rnd: () => number, depth: number, other: boolean): string {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  let out = '';
  const n = Math.floor(rnd() * (depth > 3 ? 2 : 5));
  for (let i = 0; i < n; i++) {
    const r = rnd();
    const inner = () => (depth < 5 ? html(rnd, depth + 1, other) : pick(WORDS));
    if (other && r < 0.04) out += pick(OTHER);
    else if (r < 0.35) out += pick(SPACES) + pick(WORDS) + pick(SPACES);
    else if (r < 0.5) out += `<${pick(BLOCK_TAGS)}>`.replace(/<(\w+)>/, (_, t) => `<${t}>${inner()}</${t}>`);
    else if (r < 0.65) out += `<${pick(INLINE_TAGS)}>`.replace(/<(\w+)>/, (_, t) => `<${t}>${inner()}</${t}>`);
    else if (r < 0.75) {
      const href = pick(HREFS);
      const text = rnd() < 0.3 ? href : inner();
      out += rnd() < 0.1 ? `<a>${text}</a>` : `<a class=x href="${href}" title='t'>${text}</a>`;
    } else if (r < 0.82) out += pick(['<br>', '<br/>', '<br />', '<BR>']);
    else if (r < 0.87) out += pick(['<img src="https://t.ex.com/o.gif" alt="">', '<img src=x.png />']);
    else if (r < 0.9) out += pick(['<!-- note -->', '<!---->']);
    else out += pick(WORDS);
  }
  return out;
}

describe('simpleHtmlToText', () => {
  test.each([
    ['the bench body', '<h1>Hi Ann</h1><p>Your plan: free. <a href="https://example.com/read?i=1">Read</a></p>'],
    ['headings, paragraphs and inline tags', '<h1>Hello</h1><p>Welcome <b>Ann</b>.</p><h4>Small</h4><div>x</div>'],
    [
      'a link whose text is its href, and a mailto link',
      '<a href="https://ex.com">https://ex.com</a> <a href="mailto:a@b.c">mail</a>',
    ],
    ['an anchor link and an empty href', '<p><a href="#top">Top</a> <a href="">none</a> <a>no href</a></p>'],
    [
      'images and the tracking pixel',
      '<p>Hi<img src="https://ex.com/logo.png" alt="Logo"></p><img src="t.gif" width="1">',
    ],
    ['line breaks in and between blocks', '<p>one<br>two<br/><br />three</p><br><div>four</div>'],
    ['a layout table', '<table><tr><td>Left</td> <td>Right</td></tr><tr><td><p>cell</p></td></tr></table>'],
    ['entities', '<p>Tom &amp; Jerry &lt;3 it&#39;s 50&nbsp;% &#x1F600; &quot;q&quot; a & b</p>'],
    ['a heading with a link keeps the link as written', '<h2>See <a href="https://ex.com/Path">our page</a></h2>'],
    ['wrapping at 78 characters', `<p>${'word '.repeat(60)}</p><p>${'x'.repeat(100)} tail</p>`],
    ['whitespace runs and a zero-width space', '<div>\n  a \t b\u200bc  </div>\n\n<p>  d  </p>'],
    ['comments', '<p>a<!-- c -->b <!---->c</p>'],
    ['nested blocks', '<div><div><p>deep</p></div><section>s</section></div>'],
  ])('%s: the same text as html-to-text', (_, input) => {
    const text = simpleHtmlToText(input);
    expect(text).toBeDefined();
    expect(text).toBe(libraryConversion(input));
  });

  test.each([
    ['a list', '<ul><li>one</li></ul>'],
    ['a named entity beyond the simple ones', '<p>&copy; 2026</p>'],
    ['a block that htmlparser2 moves out of a paragraph', '<p>a<div>b</div></p>'],
    ['a close tag that is not the innermost element', '<p><b>a</p>'],
    ['head and style', '<html><head><style>p{}</style></head><body><p>x</p></body></html>'],
    ['a C1 code point that HTML maps to Windows-1252', '<p>&#128;</p>'],
    [
      'a long word that html-to-text splits at the text "undefined"',
      `<p>${'y'.repeat(40)}undefined${'z'.repeat(40)}</p>`,
    ],
  ])('%s goes to html-to-text', (_, input) => {
    expect(simpleHtmlToText(input)).toBeUndefined();
    expect(htmlToPlainText(input)).toBe(libraryConversion(input).trim());
  });

  test('seeded random HTML converts as html-to-text converts it', () => {
    const rnd = seededRandom(12);
    let simple = 0;
    for (let i = 0; i < 3000; i++) {
      const input = html(rnd, 0, i % 3 === 0);
      const text = simpleHtmlToText(input);
      if (text !== undefined) simple++;
      expect({ input, text: text ?? libraryConversion(input) }).toEqual({ input, text: libraryConversion(input) });
      expect(htmlToPlainText(input)).toBe(libraryConversion(input).trim());
    }
    // Most of the cases without outside-the-subset parts take the simple path.
    expect(simple).toBeGreaterThan(1500);
  });

  test('seeded random fragments of markup (unbalanced, broken entities and tags) agree whenever taken', () => {
    const pieces = [
      ...['<', '>', '</', '/>', '&', '#', ';', '"', "'", '=', ' ', '\n', '\t', '\u200b', '\u00a0', '-->', '!--'],
      ...['a', 'p', 'b', 'h1', 'div', 'br', 'img', 'td', 'href', 'x', '1', 'amp', 'lt', 'nbsp', '#39', '#x27', 'P'],
      ...['mailto:', 'http://e.com', 'undefined', 'y'.repeat(80), ' href="', '<a href="', '<p>', '</p>', '<b>'],
      ...[
        '</b>',
        '<br>',
        '</a>',
        '<h2>',
        '</h2>',
        '<div>',
        '</div>',
        '<td>',
        '</td>',
        '<tr>',
        '<table>',
        '<img src=x>',
      ],
    ];
    const rnd = seededRandom(7);
    let simple = 0;
    for (let i = 0; i < 8000; i++) {
      let input = '';
      for (let n = Math.floor(rnd() * 30); n > 0; n--) input += pieces[Math.floor(rnd() * pieces.length)];
      const text = simpleHtmlToText(input);
      if (text === undefined) continue;
      simple++;
      expect({ input, text }).toEqual({ input, text: libraryConversion(input) });
    }
    expect(simple).toBeGreaterThan(800);
  });
});
