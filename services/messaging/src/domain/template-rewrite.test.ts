import fc from 'fast-check';
import { rewriteOutput, rewriteTemplate } from './template-rewrite.js';

// The regex rewrite this scanner replaced (quadratic on unclosed `{{`), kept as the oracle of
// what the rewrite means: the scanner must agree with it on every input.
function regexRewrite(template: string): string {
  const outputs = (text: string) =>
    text.replace(/\{\{(-?)([\s\S]*?)(-?)\}\}/g, (whole, open: string, inner: string, close: string) => {
      const rewritten = rewriteOutput(inner);
      return rewritten === undefined ? whole : `{{${open} ${rewritten} ${close}}}`;
    });
  let out = '';
  let last = 0;
  for (const m of template.matchAll(/\{%-?\s*raw\s*-?%\}[\s\S]*?\{%-?\s*endraw\s*-?%\}/g)) {
    out += outputs(template.slice(last, m.index)) + m[0];
    last = m.index! + m[0].length;
  }
  return out + outputs(template.slice(last));
}

const outcome = (f: () => string) => {
  try {
    return f();
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
};

describe('template rewrite', () => {
  test('agrees with the regex rewrite it replaced', () => {
    const pieces = [
      '{{',
      '}}',
      '{%',
      '%}',
      '-',
      ' ',
      '\n',
      'raw',
      'endraw',
      '??',
      '|',
      "'",
      '"',
      'a',
      'first name',
      '.',
      '[',
      ']',
      'x',
    ];
    const template = fc.array(fc.constantFrom(...pieces), { maxLength: 30 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(template, (t) => outcome(() => rewriteTemplate(t)) === outcome(() => regexRewrite(t))),
      { numRuns: 3000 },
    );
  });

  test('examples: fallbacks, spaced names, trims, raw blocks', () => {
    expect(rewriteTemplate("Hi {{ first name ?? 'you' }}!")).toBe(`Hi {{ ["first name"]| svc_fallback: 'you'  }}!`);
    expect(rewriteTemplate('{{- a ?? b -}}')).toBe('{{- a| svc_fallback: b  -}}');
    expect(rewriteTemplate('{% raw %}{{ a ?? b }}{% endraw %}{{x}}')).toBe('{% raw %}{{ a ?? b }}{% endraw %}{{x}}');
    expect(rewriteTemplate('{{ unclosed ?? x')).toBe('{{ unclosed ?? x');
  });

  test('pathological 1 MB inputs rewrite in one pass', () => {
    const mb = 1024 * 1024;
    const fill = (unit: string) => unit.repeat(Math.ceil(mb / unit.length));
    // Each of these made the regex rescan the rest of the text from every position.
    for (const unit of ['{{', '{{-', '{%raw%}', '{% raw %}{{', '{%  ', '{{ a ?? b }}{{']) {
      const input = fill(unit);
      expect(rewriteTemplate(input).length).toBeGreaterThanOrEqual(input.length);
    }
    // Many closed outputs, each rewritten.
    expect(rewriteTemplate(fill('{{a ?? b}}'))).toContain('svc_fallback');
  });
});
