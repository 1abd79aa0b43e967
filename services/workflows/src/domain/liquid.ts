import { Context, Liquid, type FS } from 'liquidjs';

// The Liquid of WEBHOOK bodies. A project writes these templates and the workflows process renders them, so
// they never read files (the partial tags are refused when parsed, and the fs refuses too), and the strings of
// one body share one time and one allocation budget: a long loop or a string doubled in a loop stops with an
// error (the step fails) instead of holding the worker or exhausting its memory.

/** Render time of one body, all its strings together. */
const BODY_RENDER_MS = 1000;
/** liquidjs allocation units (ranges, string and array filters) of one body, all its strings together. */
const BODY_MEMORY = 10_000_000;

class TemplateProblem extends Error {}

const refuse = () => {
  throw new TemplateProblem('templates cannot read files');
};
const refusingFs: FS = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async () => refuse(),
  readFileSync: () => refuse(),
  resolve: (_dir, file) => file,
  contains: async () => false,
  containsSync: () => false,
};

const liquid = new Liquid({
  fs: refusingFs,
  root: [],
  relativeReference: false,
  dynamicPartials: false,
  ownPropertyOnly: true,
  strictFilters: true,
  renderLimit: BODY_RENDER_MS,
  memoryLimit: BODY_MEMORY,
});
for (const tag of ['include', 'render', 'layout']) {
  liquid.registerTag(tag, {
    parse() {
      throw new TemplateProblem(`the {% ${tag} %} tag is not available in webhook bodies`);
    },
    render() {
      return '';
    },
  });
}

/** Why a string of a body is not a template that can render (a parse error), or undefined. */
export function liquidProblem(text: string): string | undefined {
  if (!text.includes('{')) return undefined;
  try {
    liquid.parse(text);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Renders the Liquid in every string of a JSON value (WEBHOOK bodies), within one budget for the whole value. */
export async function renderJson(value: unknown, vars: object): Promise<unknown> {
  // Each string gets a scope of its own (an `assign` stays in its string) but the limits of this first one.
  const { renderLimit, memoryLimit } = new Context({}, liquid.options);
  const render = async (v: unknown): Promise<unknown> => {
    if (typeof v === 'string') {
      if (!v.includes('{')) return v;
      return liquid.render(
        liquid.parse(v),
        new Context(vars, liquid.options, {}, { renderLimit, memoryLimit, liquid }),
      );
    }
    if (Array.isArray(v)) return Promise.all(v.map(render));
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = await render(x);
      return out;
    }
    return v;
  };
  return render(value);
}
