/**
 * `npm run build:dist [-- --out-dir DIR]`: compiles the platform to JavaScript (tsconfig.build.json: no
 * tests, no scripts) in dist/ and makes the tree runnable by plain node, no transpiler:
 * `node dist/bin/platform.js [service...]`. Each workspace package (lib, proto, services/*) gets its
 * package.json with its exports pointing at the emitted .js, linked as dist/node_modules/@svc/<name>;
 * third-party packages resolve from a node_modules above (the repository's, or the image's production
 * install: see Dockerfile). The web console (apps/console) is bundled once here, into
 * dist/apps/console/dist, where the gateway serves it from instead of building it at the first request.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');
const at = process.argv.indexOf('--out-dir');
const OUT = path.resolve(ROOT, at > 0 ? process.argv[at + 1] : 'dist');

/** The workspace folders (package.json `workspaces`, with `services/*` expanded). */
export function workspaces(): string[] {
  const patterns: string[] = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).workspaces;
  return patterns.flatMap((p) =>
    p.endsWith('/*')
      ? readdirSync(path.join(ROOT, p.slice(0, -2)), { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => `${p.slice(0, -2)}/${d.name}`)
      : [p],
  );
}

/** `./src/*.ts` -> `./src/*.js`, in every string of an `exports` map. */
function toJs(exports: unknown): unknown {
  if (typeof exports === 'string') return exports.replace(/\.ts$/, '.js');
  if (exports && typeof exports === 'object') {
    return Object.fromEntries(Object.entries(exports).map(([k, v]) => [k, toJs(v)]));
  }
  return exports;
}

/** The console next to the compiled gateway (its CONSOLE_DIR), with the bundle prebuilt. */
async function bundleConsole(): Promise<void> {
  const { buildConsole, CONSOLE_DIR } = await import('../services/gateway/src/routes/console.js');
  const out = path.join(OUT, path.relative(ROOT, CONSOLE_DIR));
  mkdirSync(path.join(out, 'dist'), { recursive: true });
  copyFileSync(path.join(CONSOLE_DIR, 'index.html'), path.join(out, 'index.html'));
  for (const [name, asset] of await buildConsole()) {
    if (name !== 'index.html') writeFileSync(path.join(out, 'dist', name), asset.body);
  }
}

async function main(): Promise<void> {
  rmSync(OUT, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', OUT], {
    stdio: 'inherit',
  });
  // The gateway reads the version from the package.json above its sources.
  const root = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const meta = { name: root.name, version: root.version, private: true, type: 'module' };
  writeFileSync(path.join(OUT, 'package.json'), `${JSON.stringify(meta, null, 2)}\n`);
  const links = path.join(OUT, 'node_modules');
  for (const ws of workspaces()) {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, ws, 'package.json'), 'utf8'));
    mkdirSync(path.join(OUT, ws), { recursive: true });
    writeFileSync(
      path.join(OUT, ws, 'package.json'),
      `${JSON.stringify({ ...pkg, exports: toJs(pkg.exports) }, null, 2)}\n`,
    );
    const link = path.join(links, pkg.name);
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(path.relative(path.dirname(link), path.join(OUT, ws)), link, 'dir');
  }
  await bundleConsole();
  process.stdout.write(`built ${path.relative(ROOT, OUT) || '.'}: node ${path.relative(ROOT, OUT)}/bin/platform.js\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === SELF) await main();
