/**
 * html-to-text's output (with plain-text.ts's options) for the simple HTML most bodies are, in one pass over the
 * tags: no DOM, no selector matching. It keeps html-to-text's block, heading, link and 78-character wrapping
 * rules step for step (its BlockTextBuilder and InlineTextBuilder). Anything outside that subset answers
 * undefined and goes to html-to-text: other tags (lists, pre, blockquote, head, style, script...), a named entity
 * other than the six below, a doctype, and nesting htmlparser2 would repair (a block opened inside a <p>, a close
 * tag that is not the innermost open element).
 */

const WIDTH = 78;

/** Thrown where the subset ends; simpleHtmlToText answers undefined. */
class Unsupported extends Error {}

/** Leading and trailing line breaks of html-to-text's block, paragraph, heading and table formats. */
const BLOCKS: Record<string, readonly [number, number]> = {
  article: [1, 1],
  aside: [1, 1],
  div: [1, 1],
  footer: [1, 1],
  form: [1, 1],
  header: [1, 1],
  main: [1, 1],
  nav: [1, 1],
  section: [1, 1],
  p: [2, 2],
  table: [2, 2],
  h1: [3, 2],
  h2: [3, 2],
  h3: [3, 2],
  h4: [2, 2],
  h5: [2, 2],
  h6: [2, 2],
};
const HEADINGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

/** Tags html-to-text writes inline (its '*' selector) and htmlparser2 parses as plain elements. */
const INLINE = new Set(
  (
    'span b strong i em u s small big font sub sup mark code abbr cite q del ins kbd var time center ' +
    'tbody thead tfoot tr td th'
  ).split(' '),
);

/** htmlparser2's openImpliesClose for the tags above: opening the key closes an innermost element of the set. */
const IMPLIED_CLOSE: Record<string, string[]> = {
  tr: ['tr', 'th', 'td'],
  th: ['th'],
  td: ['thead', 'th', 'td'],
  tbody: ['thead', 'tbody'],
  tfoot: ['thead', 'tbody'],
};

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** A table's entry for a name from the HTML: `&toString;` or `<constructor>` must not find Object.prototype's. */
const ownValue = <T>(table: Record<string, T>, key: string): T | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined;

/** html-to-text's whitespaceCharacters: ' \t\r\n\f\u200b' (a no-break space is part of a word). */
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 0x200b;
/** htmlparser2's whitespace inside tags. */
const isTagSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13 || c === 12;
const isAlpha = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
const WORD = /[^ \t\r\n\f\u200b]+/g;
const ATTRIBUTE_NAME = /[^ \t\n\r\f/>="'<]+/y;
const UNQUOTED_VALUE = /[^ \t\n\r\f>"'<=`]+/y;
const START_TAG = /<([a-zA-Z][a-zA-Z0-9]*)(?=[ \t\n\r\f/>])/y;
const END_TAG = /<\/([a-zA-Z][a-zA-Z0-9]*)[ \t\n\r\f]*>/y;

/** The match of a sticky regex at `at`, or null. */
function matchAt(re: RegExp, s: string, at: number): RegExpExecArray | null {
  re.lastIndex = at;
  return re.exec(s);
}

/** A block being built: html-to-text's BlockStackItem with its InlineTextBuilder folded in. */
class Block {
  raw = '';
  lines: string[][] = [];
  words: string[] = [];
  avail = WIDTH;
  stashedSpace = false;
  stashedBreaks = 0;
  constructor(public leading: number) {}

  text(): string {
    if (!this.lines.length && !this.words.length) return this.raw;
    let s = this.raw;
    for (const line of this.lines) s += `${line.join(' ')}\n`;
    return s + this.words.join(' ');
  }

  newLine(n = 1): void {
    this.lines.push(this.words);
    for (let i = 1; i < n; i++) this.lines.push([]);
    this.words = [];
    this.avail = WIDTH;
  }

  push(word: string): void {
    if (this.avail <= 0) this.newLine();
    const lineStart = this.words.length === 0;
    const cost = word.length + (lineStart ? 0 : 1);
    if (cost <= this.avail) {
      this.words.push(word);
      this.avail -= cost;
      return;
    }
    // html-to-text's splitLongWord looks for wrapCharacters[0], undefined here, as the text "undefined".
    if (word.length > WIDTH && word.slice(0, WIDTH).includes('undefined')) throw new Unsupported();
    if (!lineStart) this.newLine();
    this.words.push(word);
    this.avail -= word.length;
  }

  concat(word: string): void {
    const last = this.words.pop();
    if (last !== undefined) this.avail += last.length + (this.words.length === 0 ? 0 : 1);
    this.push(last ? last + word : word);
  }

  /** addText: a closed child block's text after this block's, at least `leading` line breaks apart. */
  append(text: string, leading: number, trailing: number): void {
    const own = this.text();
    const breaks = Math.max(this.stashedBreaks, leading);
    this.lines = [];
    this.words = [];
    this.avail = WIDTH;
    if (own) this.raw = own + '\n'.repeat(breaks) + text;
    else {
      this.raw = text;
      this.leading = breaks;
    }
    this.stashedBreaks = trailing;
  }
}

interface Open {
  tag: string;
  /** Links only: the href written after the link's text, and that text as it was added. */
  href?: string;
  linkText?: string;
}

class Converter {
  private readonly blocks: Block[] = [new Block(1)];
  private readonly open: Open[] = [];
  /** Word transforms, innermost last: uppercase in headings, a link's text collector. */
  private readonly transforms: ((word: string) => string)[] = [];

  result(): string {
    while (this.open.length) this.close(this.open[this.open.length - 1].tag);
    return this.blocks[0].text();
  }

  text(s: string, raw = false): void {
    const b = this.blocks[this.blocks.length - 1];
    if (!s) return;
    WORD.lastIndex = 0;
    let m = WORD.exec(s);
    if (b.stashedBreaks && !m) return;
    if (b.stashedBreaks) b.newLine(b.stashedBreaks);
    const stashed = b.stashedSpace;
    const words = m !== null;
    if (m) {
      if (stashed || isSpace(s.charCodeAt(0))) b.push(this.transform(m[0], raw));
      else b.concat(this.transform(m[0], raw));
      while ((m = WORD.exec(s))) b.push(this.transform(m[0], raw));
    }
    b.stashedSpace = (stashed && !words) || isSpace(s.charCodeAt(s.length - 1));
    b.stashedBreaks = 0;
  }

  private transform(word: string, raw: boolean): string {
    if (raw) return word;
    for (let i = this.transforms.length - 1; i >= 0; i--) word = this.transforms[i](word);
    return word;
  }

  openTag(tag: string, attrs: Map<string, string>): void {
    const top = this.open[this.open.length - 1]?.tag;
    if (tag === 'br') {
      this.blocks[this.blocks.length - 1].newLine();
      return;
    }
    if (tag === 'img') return;
    const block = ownValue(BLOCKS, tag);
    if (block) {
      if (top === 'p') throw new Unsupported();
      this.open.push({ tag });
      this.blocks.push(new Block(block[0]));
      if (HEADINGS.has(tag)) this.transforms.push((w) => w.toUpperCase());
      return;
    }
    if (tag === 'a') {
      const href = (attrs.get('href') ?? '').replace(/^mailto:/, '');
      const link: Open = { tag };
      if (href && href[0] !== '#') {
        link.href = href;
        link.linkText = '';
        this.transforms.push((w) => {
          link.linkText += w;
          return w;
        });
      }
      this.open.push(link);
      return;
    }
    if (!INLINE.has(tag) || (top && ownValue(IMPLIED_CLOSE, tag)?.includes(top))) throw new Unsupported();
    this.open.push({ tag });
  }

  close(tag: string): void {
    const el = this.open.pop();
    if (!el || el.tag !== tag) throw new Unsupported();
    const block = ownValue(BLOCKS, tag);
    if (block) {
      if (HEADINGS.has(tag)) this.transforms.pop();
      const b = this.blocks.pop()!;
      this.blocks[this.blocks.length - 1].append(b.text(), b.leading, Math.max(b.stashedBreaks, block[1]));
    } else if (el.href !== undefined) {
      this.transforms.pop();
      // hideLinkHrefIfSameAsText (plain-text.ts)
      if (el.href !== el.linkText) this.text(el.linkText ? ` [${el.href}]` : el.href, true);
    }
  }
}

/** Entities decoded as htmlparser2 decodes them, for the forms kept simple; anything else is Unsupported. */
function decode(s: string): string {
  let at = s.indexOf('&');
  if (at < 0) return s;
  let out = '';
  let from = 0;
  while (at >= 0) {
    const next = s.charCodeAt(at + 1);
    if (!(isAlpha(next) || (next >= 48 && next <= 57) || next === 35)) {
      at = s.indexOf('&', at + 1);
      continue;
    }
    const semi = s.indexOf(';', at);
    const name = semi > 0 && semi - at <= 10 ? s.slice(at + 1, semi) : '';
    let value = ownValue(ENTITIES, name);
    if (value === undefined) {
      const code = /^#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}))$/.exec(name);
      const cp = code ? Number.parseInt(code[1] ?? code[2], code[1] ? 16 : 10) : -1;
      // Control characters, C1 codes (Windows-1252 in HTML), surrogates and beyond Unicode map elsewhere.
      const plain =
        cp === 9 ||
        cp === 10 ||
        (cp >= 32 && cp < 127) ||
        (cp >= 160 && cp < 0xd800) ||
        (cp >= 0xe000 && cp <= 0x10ffff);
      if (!plain) throw new Unsupported();
      value = String.fromCodePoint(cp);
    }
    out += s.slice(from, at) + value;
    from = semi + 1;
    at = s.indexOf('&', from);
  }
  return out + s.slice(from);
}

/** A start tag's attributes from `i` (after its name) to its '>'; answers the index after '>' and the attributes. */
function readAttributes(html: string, i: number, attrs: Map<string, string>): { end: number; selfClosing: boolean } {
  for (;;) {
    while (isTagSpace(html.charCodeAt(i))) i++;
    const c = html[i];
    if (c === '>') return { end: i + 1, selfClosing: false };
    if (c === '/' && html[i + 1] === '>') return { end: i + 2, selfClosing: true };
    const name = matchAt(ATTRIBUTE_NAME, html, i)?.[0];
    if (!name) throw new Unsupported();
    i += name.length;
    while (isTagSpace(html.charCodeAt(i))) i++;
    let value = '';
    if (html[i] === '=') {
      i++;
      while (isTagSpace(html.charCodeAt(i))) i++;
      const q = html[i];
      if (q === '"' || q === "'") {
        const end = html.indexOf(q, i + 1);
        if (end < 0) throw new Unsupported();
        value = html.slice(i + 1, end);
        i = end + 1;
      } else {
        const raw = matchAt(UNQUOTED_VALUE, html, i)?.[0];
        if (!raw) throw new Unsupported();
        value = raw;
        i += raw.length;
      }
    }
    const key = name.toLowerCase();
    if (!attrs.has(key)) attrs.set(key, decode(value));
  }
}

/** html-to-text's text for `html`, or undefined when `html` is outside the subset this handles. */
export function simpleHtmlToText(html: string): string | undefined {
  // html-to-text cuts longer input (its limits.maxInputLength).
  if (html.length > 1 << 24) return undefined;
  const out = new Converter();
  try {
    let i = 0;
    while (i < html.length) {
      const lt = html.indexOf('<', i);
      const textEnd = lt < 0 ? html.length : lt;
      if (textEnd > i) out.text(decode(html.slice(i, textEnd)));
      if (lt < 0) break;
      const c = html.charCodeAt(lt + 1);
      if (html.startsWith('<!--', lt)) {
        const end = html.indexOf('-->', lt + 4);
        if (end < 0 || html[lt + 4] === '>' || html.startsWith('->', lt + 4)) return undefined;
        i = end + 3;
      } else if (c === 47 /* / */) {
        const m = matchAt(END_TAG, html, lt);
        if (!m) return undefined;
        const tag = m[1].toLowerCase();
        if (tag === 'br' || tag === 'img') return undefined;
        out.close(tag);
        i = lt + m[0].length;
      } else if (isAlpha(c)) {
        const m = matchAt(START_TAG, html, lt);
        if (!m) return undefined;
        const tag = m[1].toLowerCase();
        const attrs = new Map<string, string>();
        const { end, selfClosing } = readAttributes(html, lt + m[0].length, attrs);
        if (selfClosing && tag !== 'br' && tag !== 'img') return undefined;
        out.openTag(tag, attrs);
        i = end;
      } else if (c === 33 /* ! */ || c === 63 /* ? */ || Number.isNaN(c)) {
        return undefined;
      } else {
        // A '<' that starts no tag is text, as htmlparser2 reads it.
        out.text('<');
        i = lt + 1;
      }
    }
    return out.result();
  } catch (err) {
    if (err instanceof Unsupported) return undefined;
    throw err;
  }
}
