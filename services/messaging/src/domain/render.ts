import { Context, Liquid, toPromise, toValue, type Emitter, type FS, type Template } from 'liquidjs';
import { validationError, type AppError } from '@svc/lib/errors';

// SPEC.md "Template language": Liquid plus two additions done as a rewrite before parsing,
// `{{name ?? fallback}}` and names with spaces `{{first name}}`.

export type RenderKind = 'html' | 'text';

export interface RenderCallOptions {
  /** Field named in the 422 error, e.g. 'body' or 'subject'. Default 'body'. */
  field?: string;
  /** 'html' escapes every output value (use `| raw` to opt out); 'text' (subjects) does not. Default 'html'. */
  kind?: RenderKind;
}

export interface RendererOptions {
  /** Bound on the rendered output, in UTF-8 bytes. Default 1 MiB. */
  maxOutputBytes?: number;
  /** Bound on the time of one render call. Default 500 ms. */
  timeoutMs?: number;
}

export interface Renderer {
  render(template: string, vars: Record<string, unknown>, opts?: RenderCallOptions): Promise<string>;
  /** Parses only: for checking a template when it is stored. */
  validate(template: string, opts?: Pick<RenderCallOptions, 'field'>): void;
}

const FALLBACK_FILTER = 'svc_fallback';
// Counts liquidjs allocations (ranges, array and string filters): stops `(1..1000000000)` before it allocates.
const MEMORY_LIMIT = 50_000_000;
const MAX_MESSAGE = 300;

class TemplateProblem extends Error {}

// The engine never reads files: partial tags are refused at parse time, and the fs refuses too
// in case a future liquidjs adds another way to reach it.
const refusingFs: FS = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async () => { throw new TemplateProblem('templates cannot read files'); },
  readFileSync: () => { throw new TemplateProblem('templates cannot read files'); },
  resolve: (_dir, file) => file,
  contains: async () => false,
  containsSync: () => false,
};

function createEngine(kind: RenderKind, maxOutputBytes: number, timeoutMs: number): Liquid {
  const liquid = new Liquid({
    fs: refusingFs,
    root: [],
    relativeReference: false,
    dynamicPartials: false,
    ownPropertyOnly: true, // no `{{ x.constructor }}` and friends
    strictFilters: true, // a misspelt filter is an error when the template is saved, not a silent blank
    outputEscape: kind === 'html' ? 'escape' : undefined,
    parseLimit: maxOutputBytes * 2, // a template far larger than its allowed output is refused before parsing
    renderLimit: timeoutMs,
    memoryLimit: MEMORY_LIMIT,
  });
  for (const tag of ['include', 'render', 'layout']) {
    liquid.registerTag(tag, {
      parse() { throw new TemplateProblem(`the {% ${tag} %} tag is not available in templates`); },
      render() { return ''; },
    });
  }
  // Liquid's `default` also replaces '' and false; `??` must only replace missing or null.
  liquid.registerFilter(FALLBACK_FILTER, (value: unknown, fallback: unknown) => (value === null || value === undefined ? fallback : value));
  return liquid;
}

/** Writes rendered pieces and stops the render once the output passes the byte bound. */
class BoundedEmitter implements Emitter {
  buffer = '';
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}
  write(html: unknown): void {
    const piece = stringify(html);
    this.bytes += Buffer.byteLength(piece);
    if (this.bytes > this.maxBytes) throw new TemplateProblem(`output limit of ${this.maxBytes} bytes exceeded`);
    this.buffer += piece;
  }
}

// Same conversion liquidjs applies to output values.
function stringify(value: unknown): string {
  const v = toValue(value);
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (Array.isArray(v)) return v.map(stringify).join('');
  return String(v);
}

export function createRenderer(options: RendererOptions = {}): Renderer {
  const maxOutputBytes = options.maxOutputBytes ?? 1024 * 1024;
  const timeoutMs = options.timeoutMs ?? 500;
  const engines = new Map<RenderKind, Liquid>();
  const engine = (kind: RenderKind) => {
    let liquid = engines.get(kind);
    if (!liquid) engines.set(kind, (liquid = createEngine(kind, maxOutputBytes, timeoutMs)));
    return liquid;
  };

  const parse = (liquid: Liquid, template: string, field: string): Template[] => {
    try {
      return liquid.parse(rewriteTemplate(template));
    } catch (err) {
      throw templateError(field, err);
    }
  };

  return {
    validate(template, opts = {}) {
      parse(engine('html'), template, opts.field ?? 'body');
    },

    async render(template, vars, opts = {}) {
      const field = opts.field ?? 'body';
      const liquid = engine(opts.kind ?? 'html');
      const templates = parse(liquid, template, field);
      // `data` exposes the same variables for bracket lookups (`{{data[key]}}`); a custom field
      // literally named `data` stays reachable as `{{data.data}}`.
      const ctx = new Context({ ...vars, data: vars }, liquid.options, {}, { liquid });
      try {
        // A custom emitter is the only place liquidjs lets us bound the output as it grows;
        // time is bounded by liquidjs' renderLimit, checked before every node it renders.
        return stringify(await toPromise(liquid.renderer.renderTemplates(templates, ctx, new BoundedEmitter(maxOutputBytes))));
      } catch (err) {
        throw templateError(field, err);
      }
    },
  };
}

function templateError(field: string, err: unknown): AppError {
  const raw = err instanceof Error ? err.message : String(err);
  const message = raw.length > MAX_MESSAGE ? `${raw.slice(0, MAX_MESSAGE)}...` : raw;
  return validationError([{ field, code: 'template_error', message }], `Invalid template in ${field}`);
}

// ---- pre-parse rewrite -------------------------------------------------------------------

const RAW_BLOCK = /\{%-?\s*raw\s*-?%\}[\s\S]*?\{%-?\s*endraw\s*-?%\}/g;
const OUTPUT = /\{\{(-?)([\s\S]*?)(-?)\}\}/g;
// A path whose segments may contain spaces: `first name`, `profile.home city`.
const SPACED_PATH = /^[\p{L}\p{N}_-][\p{L}\p{N}_ -]*(\.[\p{L}\p{N}_ -]+)*$/u;

/** Rewrites `??` and spaced names inside `{{ }}` into plain Liquid; everything else is left untouched. */
function rewriteTemplate(template: string): string {
  let out = '';
  let last = 0;
  for (const m of template.matchAll(RAW_BLOCK)) {
    out += rewriteOutputs(template.slice(last, m.index)) + m[0];
    last = m.index! + m[0].length;
  }
  return out + rewriteOutputs(template.slice(last));
}

function rewriteOutputs(text: string): string {
  return text.replace(OUTPUT, (whole, open: string, inner: string, close: string) => {
    const rewritten = rewriteOutput(inner);
    return rewritten === undefined ? whole : `{{${open} ${rewritten} ${close}}}`;
  });
}

function rewriteOutput(inner: string): string | undefined {
  const [head, ...filters] = splitTopLevel(inner, '|');
  const operands = splitTopLevel(head, '??').map((s) => s.trim());
  if (operands.length === 1 && !needsLookup(operands[0])) return undefined;
  if (operands.some((o) => o === '')) throw new TemplateProblem(`'??' needs a value on both sides in {{${inner}}}`);
  const [value, ...fallbacks] = operands.map(toExpression);
  return [value, ...fallbacks.map((f) => ` ${FALLBACK_FILTER}: ${f} `), ...filters].join('|');
}

function needsLookup(operand: string): boolean {
  return /\s/.test(operand) && SPACED_PATH.test(operand);
}

/** `first name.tier` -> `["first name"]["tier"]`: a root bracket lookup reads keys with spaces. */
function toExpression(operand: string): string {
  if (!needsLookup(operand)) return operand;
  return operand.split('.').map((segment) => `[${JSON.stringify(segment.trim())}]`).join('');
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
