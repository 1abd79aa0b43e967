import { performance } from 'node:perf_hooks';
import { Context, Liquid, toValue, toValueSync, type Emitter, type FS, type Template } from 'liquidjs';
import { validationError, type AppError } from '@svc/lib/errors';
import { MAX_BODY_BYTES } from './content-limits.js';
import { plainPieces, renderPieces } from './plain-template.js';
import { FALLBACK_FILTER, rewriteTemplate } from './template-rewrite.js';

// Liquid templates of subjects and bodies, with bounds on everything a caller controls: the
// template's size (before the rewrite), the parse (liquidjs parseLimit), each render's time,
// allocations and output, and the render time of a whole request (RenderBudget).

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
  /** Bound on a template's length in UTF-16 code units, checked before anything reads it. Default MAX_BODY_BYTES. */
  maxTemplateChars?: number;
  /** Render time of one request, all its renders together (see RenderBudget). Default 2,000 ms. */
  requestBudgetMs?: number;
}

/** A parsed template: parse once per request, render once per recipient. */
export interface CompiledTemplate {
  render(vars: Record<string, unknown>, budget?: RenderBudget): Promise<string>;
}

export interface Renderer {
  compile(template: string, opts?: RenderCallOptions): CompiledTemplate;
  /** compile + render, without a request budget. */
  render(template: string, vars: Record<string, unknown>, opts?: RenderCallOptions): Promise<string>;
  /** Parses only: for checking a template when it is stored. */
  validate(template: string, opts?: Pick<RenderCallOptions, 'field'>): void;
  /** A fresh budget for one request. */
  budget(): RenderBudget;
}

/**
 * Render time shared by the renders of one request: each render may use at most what is
 * left, so a request with many recipients cannot multiply the per-render limit.
 */
export class RenderBudget {
  private spentMs = 0;
  constructor(readonly totalMs: number) {}
  get remainingMs(): number {
    return this.totalMs - this.spentMs;
  }
  spend(ms: number): void {
    this.spentMs += ms;
  }
}

// Counts liquidjs allocations (ranges, array and string filters): stops `(1..1000000000)` before it allocates.
const MEMORY_LIMIT = 50_000_000;
// The rewrite writes `{{a b.c}}` as `{{ ["a b"]["c"] }}`: a few times longer at most.
const REWRITE_GROWTH = 4;
const MAX_MESSAGE = 300;

class TemplateProblem extends Error {}

// The engine never reads files: partial tags are refused at parse time, and the fs refuses too
// in case a future liquidjs adds another way to reach it.
const refusingFs: FS = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async () => {
    throw new TemplateProblem('templates cannot read files');
  },
  readFileSync: () => {
    throw new TemplateProblem('templates cannot read files');
  },
  resolve: (_dir, file) => file,
  contains: async () => false,
  containsSync: () => false,
};

function createEngine(kind: RenderKind, parseLimit: number, timeoutMs: number): Liquid {
  const liquid = new Liquid({
    fs: refusingFs,
    root: [],
    relativeReference: false,
    dynamicPartials: false,
    ownPropertyOnly: true, // no `{{ x.constructor }}` and friends
    strictFilters: true, // a misspelt filter is an error when the template is saved, not a silent blank
    outputEscape: kind === 'html' ? 'escape' : undefined,
    parseLimit, // a second wall behind the size check: liquidjs refuses longer text before tokenizing it
    renderLimit: timeoutMs,
    memoryLimit: MEMORY_LIMIT,
  });
  for (const tag of ['include', 'render', 'layout']) {
    liquid.registerTag(tag, {
      parse() {
        throw new TemplateProblem(`the {% ${tag} %} tag is not available in templates`);
      },
      render() {
        return '';
      },
    });
  }
  // Liquid's `default` also replaces '' and false; `??` must only replace missing or null.
  liquid.registerFilter(FALLBACK_FILTER, (value: unknown, fallback: unknown) =>
    value === null || value === undefined ? fallback : value,
  );
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

/** Parsed templates kept for reuse: /v1/send callers repeat the same inline subject and body request after request. */
const PARSED_CACHE_ENTRIES = 100;
/** Longer templates are parsed each time (bounds the cache's memory). */
const PARSED_CACHE_MAX_CHARS = 16 * 1024;

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
  const maxTemplateChars = options.maxTemplateChars ?? MAX_BODY_BYTES;
  const requestBudgetMs = options.requestBudgetMs ?? 2000;
  const engines = new Map<RenderKind, Liquid>();
  const engine = (kind: RenderKind) => {
    let liquid = engines.get(kind);
    if (!liquid) engines.set(kind, (liquid = createEngine(kind, maxTemplateChars * REWRITE_GROWTH, timeoutMs)));
    return liquid;
  };

  // A parse depends on the engine and the text only (the field names errors, which are never kept); renders
  // share the parsed nodes, each with its own Context, as liquidjs' own template cache does. Least recently used out.
  const parsed = new Map<string, Template[]>();
  const parse = (kind: RenderKind, template: string, field: string): Template[] => {
    // Request schemas check sizes first; this covers any other caller (e.g. templates stored before the limit).
    if (template.length > maxTemplateChars) {
      const message = `Templates are at most ${maxTemplateChars} characters`;
      throw validationError([{ field, code: 'too_big', message }]);
    }
    const key = template.length <= PARSED_CACHE_MAX_CHARS ? `${kind}:${template}` : undefined;
    const hit = key === undefined ? undefined : parsed.get(key);
    if (hit) {
      parsed.delete(key!);
      parsed.set(key!, hit);
      return hit;
    }
    let templates: Template[];
    try {
      templates = engine(kind).parse(rewriteTemplate(template));
    } catch (err) {
      throw templateError(field, err);
    }
    if (key !== undefined) {
      parsed.set(key, templates);
      if (parsed.size > PARSED_CACHE_ENTRIES) parsed.delete(parsed.keys().next().value!);
    }
    return templates;
  };

  const compile = (template: string, opts: RenderCallOptions = {}): CompiledTemplate => {
    const field = opts.field ?? 'body';
    const liquid = engine(opts.kind ?? 'html');
    const templates = parse(opts.kind ?? 'html', template, field);
    const pieces = plainPieces(templates, liquid);
    return {
      async render(vars, budget = new RenderBudget(Number.POSITIVE_INFINITY)) {
        const allowedMs = Math.min(timeoutMs, budget.remainingMs);
        if (allowedMs <= 0) throw budgetError(field, budget);
        // Text and plain variable outputs: read directly, as liquidjs would render them (plain-template.ts). Output
        // over the bound goes through liquidjs, whose error names the line and column where it passed it.
        const plain = pieces && renderPieces(pieces, vars);
        if (plain !== undefined && Buffer.byteLength(plain) <= maxOutputBytes) return plain;
        // `data` exposes the same variables for bracket lookups (`{{data[key]}}`); a custom field
        // literally named `data` stays reachable as `{{data.data}}`.
        const ctx = new Context({ ...vars, data: vars }, liquid.options, { renderLimit: allowedMs }, { liquid });
        const started = performance.now();
        try {
          // A custom emitter is the only place liquidjs lets us bound the output as it grows;
          // time is bounded by liquidjs' renderLimit, checked before every node it renders.
          const emitter = new BoundedEmitter(maxOutputBytes);
          // Rendered synchronously (liquidjs' renderSync): no tag or filter of these engines is asynchronous (no
          // file is ever read), and `toPromise` made a promise per node rendered, a few percent of a send's CPU.
          return stringify(toValueSync(liquid.renderer.renderTemplates(templates, ctx, emitter)));
        } catch (err) {
          // Stopped by what was left of the request's budget rather than by the per-render limit.
          if (allowedMs < timeoutMs && performance.now() - started >= allowedMs) throw budgetError(field, budget);
          throw templateError(field, err);
        } finally {
          budget.spend(performance.now() - started);
        }
      },
    };
  };

  return {
    compile,
    render: async (template, vars, opts) => compile(template, opts).render(vars),
    validate(template, opts = {}) {
      parse('html', template, opts.field ?? 'body');
    },
    budget: () => new RenderBudget(requestBudgetMs),
  };
}

function templateError(field: string, err: unknown): AppError {
  const raw = err instanceof Error ? err.message : String(err);
  const message = raw.length > MAX_MESSAGE ? `${raw.slice(0, MAX_MESSAGE)}...` : raw;
  return validationError([{ field, code: 'template_error', message }], `Invalid template in ${field}`);
}

function budgetError(field: string, budget: RenderBudget): AppError {
  const message =
    `Rendering this request took more than its ${budget.totalMs} ms render budget; ` +
    'send fewer recipients per request or simplify the template';
  return validationError([{ field, code: 'render_budget', message }], 'Render budget exceeded');
}
