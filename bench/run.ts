/**
 * `npm run bench`: runs the benchmarks one after the other, each in its own process (they print
 * figures; they do not pass or fail). With names, only those: `npm run bench -- track filter`.
 * Without, every bench/*.ts except this runner, support.ts and type declarations.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const DIR = path.dirname(fileURLToPath(import.meta.url));
// Modules the benches import, not benchmarks of their own.
const NOT_BENCHMARKS = new Set(['run.ts', 'support.ts', 'table-writes.ts']);

const all = readdirSync(DIR)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !NOT_BENCHMARKS.has(f))
  .map((f) => f.slice(0, -3))
  .sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !existsSync(path.join(DIR, `${w}.ts`)) || NOT_BENCHMARKS.has(`${w}.ts`));
if (unknown.length) {
  process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}; known: ${all.join(', ')}\n`);
  process.exit(2);
}

let failed = 0;
for (const name of wanted.length ? wanted : all) {
  process.stdout.write(`\n=== bench/${name}.ts ===\n`);
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(DIR, `${name}.ts`)], { stdio: 'inherit' });
    child.once('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
  if (code !== 0) {
    failed++;
    process.stdout.write(`bench/${name}.ts exited with ${code}\n`);
  }
}
process.exit(failed ? 1 : 0);
