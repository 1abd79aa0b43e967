import { liquidProblem, renderJson } from './liquid.js';

const vars = { contact: { email: 'ann@example.com' }, event: { data: { plan: 'pro' } } };

describe('WEBHOOK body Liquid', () => {
  test('renders every string of the body; an assign stays in its string', async () => {
    const body = {
      hi: 'Hi {{contact.email}}',
      list: ['{{event.data.plan}}', 2, null],
      a: "{% assign x = 'y' %}{{x}}",
      b: '[{{x}}]',
    };
    expect(await renderJson(body, vars)).toEqual({
      hi: 'Hi ann@example.com',
      list: ['pro', 2, null],
      a: 'y',
      b: '[]',
    });
  });

  test('never reads a file: include, render and layout are refused when parsed and when rendered', async () => {
    for (const tag of ["{% include 'package.json' %}", "{% render 'package.json' %}", "{% layout 'package.json' %}"]) {
      expect(liquidProblem(tag)).toContain('not available');
      await expect(renderJson({ x: tag }, vars)).rejects.toThrow('not available');
    }
    expect(liquidProblem('{{ contact.email }}')).toBeUndefined();
    expect(liquidProblem('{{ x | nosuchfilter }}')).toContain('nosuchfilter');
  });

  test('a body cannot hold the worker or its memory: one time and allocation budget for all its strings', async () => {
    const doubling = "{% assign s = 'xxxxxxxxxx' %}{% for i in (1..40) %}{% assign s = s | append: s %}{% endfor %}";
    await expect(renderJson({ s: doubling }, vars)).rejects.toThrow('memory alloc limit exceeded');
    await expect(renderJson({ r: '{% for i in (1..1000000000) %}{% endfor %}' }, vars)).rejects.toThrow('limit');
    // Each string alone stays under the limits; together they do not.
    const loop = '{% for i in (1..10000) %}{% for j in (1..50) %}{% endfor %}{% endfor %}';
    await expect(
      renderJson(
        Array.from({ length: 20 }, () => loop),
        vars,
      ),
    ).rejects.toThrow('limit exceeded');
  });
});
