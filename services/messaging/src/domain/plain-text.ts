import { compile } from 'html-to-text';

// The text/plain alternative SPEC.md requires for every HTML body ("There is no plain-text field").
const convert = compile({
  wordwrap: 78, // RFC 5322 recommends lines of at most 78 characters
  selectors: [
    // "text [url]" keeps links usable in text-only clients; an href equal to its text is not repeated.
    { selector: 'a', options: { linkBrackets: ['[', ']'], hideLinkHrefIfSameAsText: true } },
    // Images, the open-tracking pixel among them, carry nothing a text reader can use.
    { selector: 'img', format: 'skip' },
    { selector: 'head', format: 'skip' },
    { selector: 'style', format: 'skip' },
    { selector: 'script', format: 'skip' },
  ],
});

export function htmlToPlainText(html: string): string {
  return convert(html).trim();
}
