import { AppError } from '@svc/lib/errors';
import { createRenderer, RenderBudget } from './render.js';

const renderer = createRenderer();
const text = (template: string, vars: Record<string, unknown> = {}) =>
  renderer.render(template, vars, { kind: 'text', field: 'subject' });
const html = (template: string, vars: Record<string, unknown> = {}) =>
  renderer.render(template, vars, { kind: 'html', field: 'body' });

async function templateErrorOf(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.status).toBe(422);
    expect(e.code).toBe('VALIDATION_ERROR');
    expect(e.errors).toHaveLength(1);
    return e.errors![0];
  }
  throw new Error('expected a throw');
}

describe('template language', () => {
  test('variables are written {{name}} and nested values {{a.b}}', async () => {
    expect(await text('Hi {{name}}, tier {{profile.tier}}', { name: 'Ann', profile: { tier: 'gold' } })).toBe(
      'Hi Ann, tier gold',
    );
    expect(await text('[{{missing.deep}}]')).toBe('[]');
  });

  test('{{name ?? fallback}} gives the fallback when the value is missing or null', async () => {
    expect(await text("Hi {{name ?? 'friend'}}")).toBe('Hi friend');
    expect(await text('Hi {{ name ?? "friend" }}', { name: null })).toBe('Hi friend');
    expect(await text('{{count ?? 0}}')).toBe('0');
    expect(await text('{{nick ?? first ?? "you"}}', { first: 'Ann' })).toBe('Ann');
    expect(await text('{{nick ?? profile.name}}', { profile: { name: 'Bo' } })).toBe('Bo');
  });

  test('?? keeps present values, even an empty string, false or 0', async () => {
    expect(await text("[{{name ?? 'friend'}}]", { name: '' })).toBe('[]');
    expect(await text("{{flag ?? 'x'}}", { flag: false })).toBe('false');
    expect(await text("{{n ?? 'x'}}", { n: 0 })).toBe('0');
    expect(await text("{{name ?? 'friend'}}", { name: 'Ann' })).toBe('Ann');
  });

  test('?? combines with filters and whitespace control', async () => {
    expect(await text("{{ name ?? 'friend' | upcase }}")).toBe('FRIEND');
    expect(await text("a {{- name ?? 'b' -}} c")).toBe('abc');
  });

  test('?? inside quotes and raw blocks is literal text', async () => {
    expect(await text("{{ 'a ?? b' }}")).toBe('a ?? b');
    expect(await text('{% raw %}{{ x ?? y }}{% endraw %}')).toBe('{{ x ?? y }}');
  });

  test('names with spaces are referenced directly: {{first name}}', async () => {
    expect(await text('Hi {{first name}}', { 'first name': 'Ann' })).toBe('Hi Ann');
    expect(await text("Hi {{ first name ?? 'there' | upcase }}")).toBe('Hi THERE');
    expect(await text('{{profile.home city}}', { profile: { 'home city': 'Oslo' } })).toBe('Oslo');
  });

  test('names with spaces via a bracket lookup on data: {{data[key] | filter}}', async () => {
    const vars = { 'first name': 'ann', key: 'first name' };
    expect(await text('{{data[key] | capitalize}}', vars)).toBe('Ann');
    expect(await text('{{ data["first name"] | upcase }}', vars)).toBe('ANN');
  });

  test('conditionals, loops and standard filters work', async () => {
    const vars = {
      vip: true,
      items: [
        { name: 'a', qty: 2 },
        { name: 'b', qty: 3 },
      ],
    };
    const template =
      '{% if vip %}VIP {% endif %}{% for i in items %}{{ i.name | upcase }}x{{ i.qty | times: 2 }}' +
      '{% unless forloop.last %}, {% endunless %}{% endfor %}';
    expect(await text(template, vars)).toBe('VIP Ax4, Bx6');
    expect(await text('{{ "2024-01-02" | date: "%Y" }} {{ list | join: "+" }}', { list: [1, 2] })).toBe('2024 1+2');
  });

  test('HTML bodies escape values by default; subjects do not', async () => {
    const vars = { name: '<script>x</script> & co' };
    expect(await html('<p>{{name}}</p>', vars)).toBe('<p>&lt;script&gt;x&lt;/script&gt; &amp; co</p>');
    expect(await html('{{name | raw}}', vars)).toBe('<script>x</script> & co');
    expect(await text('{{name}}', vars)).toBe('<script>x</script> & co');
  });

  test('templates cannot reach the file system: include, render and layout are refused', async () => {
    for (const tpl of ["{% include 'x' %}", "{% render '/etc/passwd' %}", "{% layout 'base' %}"]) {
      const error = await templateErrorOf(html(tpl));
      expect(error).toEqual({
        field: 'body',
        code: 'template_error',
        message: expect.stringContaining('not available'),
      });
    }
  });

  test('prototype properties are not exposed', async () => {
    expect(await text('[{{ name.constructor }}{{ name.__proto__ }}]', { name: 'x' })).toBe('[]');
  });

  test('a syntax error is a 422 template_error on the caller-named field', async () => {
    expect(await templateErrorOf(text('Hi {% if x %}', {}))).toEqual(
      expect.objectContaining({ field: 'subject', code: 'template_error' }),
    );
    expect(await templateErrorOf(text('{{ x | no_such_filter }}'))).toEqual(
      expect.objectContaining({ field: 'subject', code: 'template_error' }),
    );
    expect(await templateErrorOf(text("{{ ?? 'x' }}"))).toEqual(
      expect.objectContaining({ field: 'subject', code: 'template_error' }),
    );
  });

  test('validate parses without rendering and reports the field', () => {
    expect(() => renderer.validate('Hi {{first name ?? "you"}} {% for i in list %}{{i}}{% endfor %}')).not.toThrow();
    try {
      renderer.validate('{% for %}', { field: 'subject' });
      throw new Error('expected a throw');
    } catch (err) {
      expect((err as AppError).errors).toEqual([expect.objectContaining({ field: 'subject', code: 'template_error' })]);
    }
  });

  test('a huge range is stopped by the allocation bound', async () => {
    const error = await templateErrorOf(html('{% for i in (1..1000000000) %}x{% endfor %}'));
    expect(error.code).toBe('template_error');
  });

  test('output is bounded by maxOutputBytes', async () => {
    const small = createRenderer({ maxOutputBytes: 1000 });
    expect(await small.render('{% for i in (1..100) %}ab{% endfor %}', {})).toHaveLength(200);
    const error = await templateErrorOf(small.render('{% for i in (1..10000) %}ab{% endfor %}', {}));
    expect(error.message).toContain('output limit');
  });

  test('rendering time is bounded by timeoutMs', async () => {
    const quick = createRenderer({ timeoutMs: 50 });
    const started = Date.now();
    const error = await templateErrorOf(
      quick.render('{% for i in (1..3000) %}{% for j in (1..3000) %}{% assign k = j %}{% endfor %}{% endfor %}', {}),
    );
    expect(error.message).toContain('limit');
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('compiling once and the request render budget', () => {
  const heavy = '{% for i in (1..3000) %}{% for j in (1..3000) %}{% assign k = j %}{% endfor %}{% endfor %}';

  test("a compiled template renders once per recipient with that recipient's variables", async () => {
    const compiled = renderer.compile('Hi {{first name ?? "you"}}', { kind: 'text', field: 'subject' });
    const budget = renderer.budget();
    expect(await compiled.render({ 'first name': 'Ann' }, budget)).toBe('Hi Ann');
    expect(await compiled.render({}, budget)).toBe('Hi you');
    expect(budget.remainingMs).toBeLessThanOrEqual(budget.totalMs);
  });

  test('the same text compiled again (kept parsed) renders the same; html and text stay apart', async () => {
    const vars = { name: '<b>Ann</b>' };
    const again = createRenderer();
    for (let i = 0; i < 3; i++) {
      expect(await again.compile('Hi {{name}}', { kind: 'html' }).render(vars)).toBe('Hi &lt;b&gt;Ann&lt;/b&gt;');
      expect(await again.compile('Hi {{name}}', { kind: 'text' }).render(vars)).toBe('Hi <b>Ann</b>');
    }
    // Concurrent renders of one parse each keep their own variables.
    const shared = again.compile('{% for i in (1..3) %}{{name}}{% endfor %}', { kind: 'text' });
    const names = ['a', 'b', 'c', 'd'];
    expect(await Promise.all(names.map((name) => shared.render({ name })))).toEqual(['aaa', 'bbb', 'ccc', 'ddd']);
    // A syntax error is never kept: each compile names its own field.
    expect(() => again.compile('{% if %}', { field: 'subject' })).toThrow(
      expect.objectContaining({ errors: [expect.objectContaining({ field: 'subject' })] }),
    );
    expect(() => again.compile('{% if %}', { field: 'body' })).toThrow(
      expect.objectContaining({ errors: [expect.objectContaining({ field: 'body' })] }),
    );
  });

  test('a render that outlives what is left of the budget is a 422 render_budget', async () => {
    const small = createRenderer({ timeoutMs: 500, requestBudgetMs: 60 });
    const started = Date.now();
    const error = await templateErrorOf(small.compile(heavy).render({}, small.budget()));
    expect(error).toEqual(expect.objectContaining({ field: 'body', code: 'render_budget' }));
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test('a spent budget refuses further renders, even quick ones', async () => {
    const budget = new RenderBudget(10);
    budget.spend(10);
    const error = await templateErrorOf(renderer.compile('x', { field: 'subject' }).render({}, budget));
    expect(error).toEqual(expect.objectContaining({ field: 'subject', code: 'render_budget' }));
  });

  test('the per-render limit still answers template_error while the budget lasts', async () => {
    const quick = createRenderer({ timeoutMs: 50, requestBudgetMs: 10_000 });
    const error = await templateErrorOf(quick.compile(heavy).render({}, quick.budget()));
    expect(error.code).toBe('template_error');
  });

  test('templates over the size bound are refused before they are read', () => {
    const tiny = createRenderer({ maxTemplateChars: 10 });
    const tooBig = expect.objectContaining({ errors: [expect.objectContaining({ field: 'body', code: 'too_big' })] });
    expect(() => tiny.validate('{{'.repeat(6))).toThrow(tooBig);
    expect(() => tiny.validate('{{ok}}')).not.toThrow();
  });

  test('a body of `{{` repeated up to the size bound is refused promptly', () => {
    expect(() => renderer.validate('{{'.repeat(256 * 1024))).toThrow(expect.objectContaining({ status: 422 }));
  });
});
