import { seededRandom } from '@svc/lib/test-random';
import { createRenderer, type RenderKind } from './render.js';

// The direct path must render exactly what liquidjs renders. A tag that renders nothing keeps a template off it,
// so each case compares the renderer's answer for a template with liquidjs' answer for the same template + tag.
const renderer = createRenderer();
const VIA_LIQUID = '{% if false %}{% endif %}';

async function both(template: string, vars: Record<string, unknown>, kind: RenderKind) {
  const answer = (t: string) =>
    renderer.render(t, vars, { kind }).then(
      (text) => ({ text }),
      (err: Error) => ({ error: err.message }),
    );
  return { direct: await answer(template), liquid: await answer(template + VIA_LIQUID) };
}

const VALUES: unknown[] = [
  'Ann',
  '<b>Tom & "Jerry"</b> it\'s',
  '',
  0,
  -0,
  1.5,
  1e21,
  -42,
  true,
  false,
  null,
  undefined,
  ['a', 'b'],
  { b: 'nested <x>', c: { d: 7 } },
  { b: null },
  { size: 3, first: 'f' },
];
const PATHS = ['firstName', 'plan', 'a', 'a.b', 'a.b.c', 'a.c.d', 'data.firstName', 'data.a.b', 'missing', 'missing.x'];
const ODD_PATHS = ['toString', 'constructor', 'a.size', 'list.first', 'data', 'firstName.length', 'a.b.length'];
const TEXT = ['Hi ', '<p>', ' & ', '"q"', "'", '\n', 'plain', ' {', '}'];

function template(rnd: () => number): string {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  let out = '';
  for (let n = Math.floor(rnd() * 4); n >= 0; n--) {
    const path = rnd() < 0.1 ? pick(ODD_PATHS) : pick(PATHS);
    const r = rnd();
    out += pick(TEXT);
    if (r < 0.5) out += `{{${path}}}`;
    else if (r < 0.75) out += `{{ ${path} ?? "${pick(['free', '<none> & "x"', ''])}" }}`;
    else if (r < 0.85) out += `{{- ${path} -}}`;
    else if (r < 0.9) out += `{{ ${path} | upcase }}`;
    else if (r < 0.93) out += `{{ ${path} | raw }}`;
    else if (r < 0.96) out += `{{ ${path} ?? 0 }}`;
    else out += `{{ ${path} }}`;
  }
  return out;
}

function variables(rnd: () => number): Record<string, unknown> {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const vars: Record<string, unknown> = {};
  for (const key of ['firstName', 'plan', 'a', 'list', 'missing']) if (rnd() < 0.8) vars[key] = pick(VALUES);
  return vars;
}

describe('plain templates render without liquidjs, as liquidjs renders them', () => {
  test.each([
    ['escaped values in HTML', '<h1>Hi {{firstName}}</h1>', { firstName: '<Ann & "Bo">' }, 'html'],
    ['unescaped in text', 'Hello {{firstName}}, issue {{issue}}', { firstName: '<A>', issue: 1.5 }, 'text'],
    ['the ?? fallback for missing and null only', '{{a ?? "x"}}|{{b ?? "y"}}|{{c ?? "z"}}', { b: null, c: '' }, 'html'],
    ['nested paths and data', '{{a.b.c}} {{data.a.b.c}} {{a.x.y}}', { a: { b: { c: 'deep' } } }, 'html'],
    ['numbers and booleans', '{{n}} {{m}} {{t}} {{f}}', { n: 1e21, m: -0, t: true, f: false }, 'text'],
    ['whitespace control', '<p> {{- name -}} </p>', { name: 'x' }, 'html'],
    ['inherited names', '{{toString}}{{constructor}}{{a.hasOwnProperty}}', { a: {} }, 'html'],
    [
      'arrays, objects and special keys (liquidjs renders them)',
      '{{l}} {{o}} {{l.size}} {{l.first}}',
      {
        l: ['a', '<b>'],
        o: { k: 1 },
      },
      'html',
    ],
  ] as const)('%s', async (_, tpl, vars, kind) => {
    const { direct, liquid } = await both(tpl, vars as Record<string, unknown>, kind);
    expect(direct).toEqual(liquid);
  });

  test('seeded random templates and variables', async () => {
    const rnd = seededRandom(3);
    for (let i = 0; i < 2000; i++) {
      const tpl = template(rnd);
      const vars = variables(rnd);
      for (const kind of ['html', 'text'] as const) {
        const { direct, liquid } = await both(tpl, vars, kind);
        expect({ tpl, vars, kind, out: direct }).toEqual({ tpl, vars, kind, out: liquid });
      }
    }
  });

  test('output over the bound fails as from liquidjs, with its position', async () => {
    const small = createRenderer({ maxOutputBytes: 10 });
    const error = {
      field: 'body',
      code: 'template_error',
      message: 'output limit of 10 bytes exceeded, line:1, col:4',
    };
    await expect(small.render('ab {{a}}', { a: 'ü'.repeat(4) })).rejects.toMatchObject({ errors: [error] });
    await expect(small.render('ab {{a}}', { a: 'ü'.repeat(3) })).resolves.toBe('ab üüü');
  });
});
