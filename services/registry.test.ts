import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from '@svc/lib/config';
import { SERVICES } from './registry.js';

const ROOT = path.resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** `services:` of the chart's values.yaml: each service's name and port (the block is plain two-level YAML). */
function chartServices(): Record<string, number | undefined> {
  const block = read('deploy/k8s/platform/values.yaml').split(/^services:\s*$/m)[1]?.split(/^\S/m)[0] ?? '';
  const found: Record<string, number | undefined> = {};
  let current = '';
  for (const line of block.split('\n')) {
    const name = /^ {2}([a-z][\w-]*):\s*$/.exec(line);
    const port = /^ {4}port:\s*(\d+)\s*$/.exec(line);
    if (name) found[(current = name[1])] = undefined;
    else if (port && current) found[current] = Number(port[1]);
  }
  return found;
}

describe('service registry', () => {
  test('names and default ports are unique; the edge (gateway) starts last', () => {
    const names = SERVICES.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(SERVICES.map((s) => s.defaultPort)).size).toBe(SERVICES.length);
    expect(SERVICES.filter((s) => s.edge).map((s) => s.name)).toEqual(['gateway']);
    expect(names.at(-1)).toBe('gateway');
  });

  test('every subject on the bus is owned by one service', () => {
    const subjects = SERVICES.flatMap((s) => Object.values(s.topics ?? {}).map((t) => t.subject));
    expect(subjects.length).toBeGreaterThan(0);
    expect(new Set(subjects).size).toBe(subjects.length);
  });

  test('each service is one package whose only export is its entry, loaded when it has code', () => {
    for (const s of SERVICES) {
      const pkg = JSON.parse(read(`services/${s.name}/package.json`));
      expect({ name: pkg.name, exports: pkg.exports }).toEqual({ name: `@svc/${s.name}`, exports: { '.': './src/index.ts' } });
      expect({ name: s.name, hasCode: existsSync(path.join(ROOT, `services/${s.name}/src/index.ts`)) }).toEqual({
        name: s.name,
        hasCode: Boolean(s.load),
      });
    }
  });

  test("each service's entry exports its starter and a config fragment that validates alone", async () => {
    for (const s of SERVICES.filter((x) => x.load)) {
      const module = await s.load!();
      expect(typeof module.start).toBe('function');
      if (module.config) expect(() => parseEnv(module.config!, {})).not.toThrow();
    }
  });

  test("the Helm chart's services are the registry's services that have code, on their default ports", () => {
    const expected = Object.fromEntries(SERVICES.filter((s) => s.load).map((s) => [s.name, s.defaultPort]));
    expect(chartServices()).toEqual(expected);
  });
});
