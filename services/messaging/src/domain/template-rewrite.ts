// SPEC.md "Template language": Liquid plus two additions done as a rewrite before parsing,
// `{{name ?? fallback}}` and names with spaces `{{first name}}`.
//
// The rewrite runs on caller input before liquidjs' own limits apply, so it is a hand-written
// scanner that only moves forward (indexOf from the last position): linear in the template's
// length whatever the input. A lazy regex here (`\{\{[\s\S]*?\}\}` applied at every `{{`)
// rescanned to the end of the text from each `{{` and took seconds on a few hundred KB.

export const FALLBACK_FILTER = 'svc_fallback';

/** A rewrite problem the renderer reports as a template error. */
export class TemplateRewriteError extends Error {}

// A path whose segments may contain spaces: `first name`, `profile.home city`. The segment
// classes exclude '.', so matching cannot backtrack.
const SPACED_PATH = /^[\p{L}\p{N}_-][\p{L}\p{N}_ -]*(\.[\p{L}\p{N}_ -]+)*$/u;
const WHITESPACE = /\s/;

interface Span {
  start: number;
  end: number;
}

/** Rewrites `??` and spaced names inside `{{ }}` into plain Liquid; everything else is left untouched. */
export function rewriteTemplate(template: string): string {
  let out = '';
  let last = 0;
  // `{% raw %}...{% endraw %}` is copied as is; without an `endraw` there is no raw block at all.
  for (;;) {
    const open = findTag(template, last, 'raw');
    const close = open && findTag(template, open.end, 'endraw');
    if (!open || !close) break;
    out += rewriteOutputs(template.slice(last, open.start)) + template.slice(open.start, close.end);
    last = close.end;
  }
  return out + rewriteOutputs(template.slice(last));
}

/** The first `{%-? name -?%}` at or after `from`. */
function findTag(text: string, from: number, name: string): Span | undefined {
  for (let i = text.indexOf('{%', from); i !== -1; i = text.indexOf('{%', i + 2)) {
    const end = tagEnd(text, i, name);
    if (end !== -1) return { start: i, end };
  }
  return undefined;
}

/** End of `{%-?\s*name\s*-?%}` starting at `start`, or -1. Reads only this tag's own characters. */
function tagEnd(text: string, start: number, name: string): number {
  let i = start + 2;
  if (text[i] === '-') i++;
  while (i < text.length && WHITESPACE.test(text[i])) i++;
  if (!text.startsWith(name, i)) return -1;
  i += name.length;
  while (i < text.length && WHITESPACE.test(text[i])) i++;
  if (text[i] === '-') i++;
  return text.startsWith('%}', i) ? i + 2 : -1;
}

/** Rewrites each `{{-? inner -?}}`: from a `{{` to the first `}}` after it, as Liquid reads outputs. */
function rewriteOutputs(text: string): string {
  let out = '';
  let last = 0;
  for (let open = text.indexOf('{{'); open !== -1; open = text.indexOf('{{', last)) {
    const trimLeft = text[open + 2] === '-';
    const innerStart = open + 2 + (trimLeft ? 1 : 0);
    const close = text.indexOf('}}', innerStart);
    // No `}}` after this `{{`: none after any later one either.
    if (close === -1) break;
    const trimRight = close > innerStart && text[close - 1] === '-';
    const inner = text.slice(innerStart, trimRight ? close - 1 : close);
    const rewritten = rewriteOutput(inner);
    out += text.slice(last, open);
    out +=
      rewritten === undefined
        ? text.slice(open, close + 2)
        : `{{${trimLeft ? '-' : ''} ${rewritten} ${trimRight ? '-' : ''}}}`;
    last = close + 2;
  }
  return out + text.slice(last);
}

/** The rewrite of one output's inner text, or undefined to keep it as written (exported for tests). */
export function rewriteOutput(inner: string): string | undefined {
  const [head, ...filters] = splitTopLevel(inner, '|');
  const operands = splitTopLevel(head, '??').map((s) => s.trim());
  if (operands.length === 1 && !needsLookup(operands[0])) return undefined;
  if (operands.some((o) => o === ''))
    throw new TemplateRewriteError(`'??' needs a value on both sides in {{${inner}}}`);
  const [value, ...fallbacks] = operands.map(toExpression);
  return [value, ...fallbacks.map((f) => ` ${FALLBACK_FILTER}: ${f} `), ...filters].join('|');
}

function needsLookup(operand: string): boolean {
  return WHITESPACE.test(operand) && SPACED_PATH.test(operand);
}

/** `first name.tier` -> `["first name"]["tier"]`: a root bracket lookup reads keys with spaces. */
function toExpression(operand: string): string {
  if (!needsLookup(operand)) return operand;
  return operand
    .split('.')
    .map((segment) => `[${JSON.stringify(segment.trim())}]`)
    .join('');
}

/** Splits on `separator` outside quotes and brackets. */
function splitTopLevel(text: string, separator: string): string[] {
  const parts: string[] = [];
  let quote: string | undefined;
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote) {
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
    } else if (ch === '[' || ch === '(') {
      depth++;
    } else if (ch === ']' || ch === ')') {
      depth--;
    } else if (depth === 0 && text.startsWith(separator, i)) {
      parts.push(text.slice(start, i));
      i += separator.length - 1;
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}
