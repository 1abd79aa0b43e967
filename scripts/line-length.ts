// Lines of TypeScript at most 120 characters (STYLE.md): Biome's formatter wraps code, but
// not long strings, comments or test names, so this check names what is left.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MAX = 120;
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], {
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => f && !f.startsWith('proto/gen/'));

const long: string[] = [];
for (const file of files) {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    continue; // deleted in the working tree
  }
  text.split('\n').forEach((line, i) => {
    if (line.length > MAX) long.push(`${file}:${i + 1} has ${line.length} characters`);
  });
}
if (long.length > 0) {
  console.error(`${long.length} lines longer than ${MAX} characters:\n${long.join('\n')}`);
  process.exit(1);
}
