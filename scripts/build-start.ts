/**
 * `npm start` runs this first: bundles the platform's own code (bin, lib, proto, services) with esbuild into
 * .build/ (gitignored), so the platform process runs plain JavaScript (`node .build/platform.js`) instead of
 * transpiling TypeScript at run time with tsx, which costs about 48 MB of RSS (bench/memory.ts). Third-party
 * packages stay external: they load from node_modules as under tsx. A build whose inputs are all older than
 * it is kept (a second `npm start` does not rebuild). Source maps name the .ts files in stack traces
 * (`node --enable-source-maps`).
 *
 * - Dynamic imports stay dynamic (code splitting): a service's code and the trace SDK's instrumented modules
 *   load when bin/platform.ts asks for them, as under tsx.
 * - The DKIM signing thread (services/messaging/src/workers/signing-thread.ts) is an entry of its own,
 *   .build/signing-thread.js, beside the chunk of the pool that starts it (`./signing-thread.js`).
 * - Files a module reads outside its own folder (`new URL('../…', import.meta.url)`: package.json, the
 *   console's apps/console) are data the bundle does not carry: those URLs keep pointing into the sources.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');
export const START_DIR = path.join(ROOT, '.build');
/** The entry `npm start` runs. */
export const START_ENTRY = path.join(START_DIR, 'platform.js');
const INPUTS = path.join(START_DIR, 'inputs.json');

/** Bare imports other than the workspace's own packages (@svc/*) load from node_modules at run time. */
const thirdPartyExternal: Plugin = {
  name: 'third-party-external',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@svc/') ? undefined : { path: args.path, external: true },
    );
  },
};

/** `new URL('../x', import.meta.url)` -> `new URL('../x', '<the .ts file's URL>')`: see the header. */
const sourceRelativeData: Plugin = {
  name: 'source-relative-data',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const text = readFileSync(args.path, 'utf8');
      const href = JSON.stringify(pathToFileURL(args.path).href);
      const contents = text.replace(
        /new URL\((['"`]\.\.\/[^'"`]*['"`]),\s*import\.meta\.url\)/g,
        `new URL($1, ${href})`,
      );
      return { contents, loader: 'ts' };
    });
  },
};

/** True when a build exists and no file it was made from (nor this script, nor the lockfile) changed since. */
function upToDate(): boolean {
  if (!existsSync(START_ENTRY) || !existsSync(INPUTS)) return false;
  const builtAt = statSync(START_ENTRY).mtimeMs;
  const inputs: string[] = [...JSON.parse(readFileSync(INPUTS, 'utf8')), SELF, path.join(ROOT, 'package-lock.json')];
  return inputs.every((file) => existsSync(file) && statSync(file).mtimeMs <= builtAt);
}

/** Bundles into .build/ unless it is up to date; answers whether it built. */
export async function buildStart(): Promise<boolean> {
  if (upToDate()) return false;
  rmSync(START_DIR, { recursive: true, force: true });
  mkdirSync(START_DIR, { recursive: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: {
      platform: 'bin/platform.ts',
      'signing-thread': 'services/messaging/src/workers/signing-thread.ts',
    },
    outdir: START_DIR,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    logLevel: 'warning',
    plugins: [thirdPartyExternal, sourceRelativeData],
  });
  const inputs = Object.keys(result.metafile.inputs).map((f) => path.resolve(ROOT, f));
  writeFileSync(INPUTS, `${JSON.stringify(inputs)}\n`);
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === SELF) {
  const started = Date.now();
  if (await buildStart()) {
    process.stdout.write(`built ${path.relative(ROOT, START_ENTRY)} in ${Date.now() - started} ms\n`);
  }
}
