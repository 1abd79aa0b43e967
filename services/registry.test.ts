import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from '@svc/lib/config';
import { chartServices, SERVICES } from './registry.js';

const ROOT = path.resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The service names under `services:` in the chart's values.yaml (the block is plain two-level YAML). */
function valuesServiceNames(): string[] {
  const block =
    read('deploy/k8s/platform/values.yaml')
      .split(/^services:\s*$/m)[1]
      ?.split(/^\S/m)[0] ?? '';
  return [...block.matchAll(/^ {2}([a-z][\w-]*):/gm)].map((m) => m[1]);
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
      expect({ name: pkg.name, exports: pkg.exports }).toEqual({
        name: `@svc/${s.name}`,
        exports: { '.': './src/index.ts' },
      });
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

  test("the Helm chart deploys the registry's services that have code, on their ports", () => {
    const generated = JSON.parse(read('deploy/k8s/platform/services.json'));
    // Stale: run `npm run generate` (scripts/chart-services.ts) after changing the registry.
    expect(generated).toEqual(chartServices());
    const deployed = Object.keys(chartServices().services);
    expect(deployed).toContain('gateway');
    // values.yaml only sizes services: an entry for a service the chart does not deploy is a leftover.
    expect(valuesServiceNames().filter((name) => !deployed.includes(name))).toEqual([]);
  });
});
