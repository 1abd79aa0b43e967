/**
 * The top self-time frames of a V8 CPU profile (`--cpu-prof`, BENCH_PROFILE=...), as shares of the
 * process's busy time (idle left out), and the same time summed per package, so a README table can be
 * filled without a profiler UI.
 *
 *   node --import tsx bench/profile-top.ts <file.cpuprofile> [frames=15] [from s] [to s]
 *   node --import tsx bench/profile-top.ts $TMPDIR/svc-bench-logs/prof/<prefix>-gateway   (its main-thread profile)
 *
 * `from`/`to` keep the samples of that window, in seconds after the process started (bench/track.ts prints
 * the window of its /v1/track run), so start-up and the other runs stay out.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A folder holds one profile per thread: the largest is the main thread's (the loader's thread idles). */
function profileFile(arg: string): string {
  if (!statSync(arg).isDirectory()) return arg;
  const files = readdirSync(arg)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(arg, f));
  return files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
}

/** `node_modules/@scope/pkg/...` -> `@scope/pkg`; node's own modules -> `node:`; ours -> `(ours) dir`. */
function packageOf(url: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.startsWith('node:')) return 'node:';
  if (!url) return '(native/vm)';
  const ours = /\/(lib|services\/[^/]+|bin)\/src\//.exec(url) ?? /\/(lib|services\/[^/]+|bin)\//.exec(url);
  return ours ? `(ours) ${ours[1]}` : '(other)';
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function main(): void {
  const [arg, n = '15', from = '0', to = 'Infinity'] = process.argv.slice(2);
  if (!arg) throw new Error('usage: profile-top.ts <file.cpuprofile | folder> [frames]');
  const file = profileFile(arg);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  const interval = median(profile.timeDeltas.filter((d) => d > 0));
  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    // Samples, not their time deltas: on a loaded box a sample the scheduler delayed would charge its whole gap
    // to one frame. Each sample stands for one sampling interval.
    if (at >= Number(from) * 1e6 && at <= Number(to) * 1e6) self.set(id, (self.get(id) ?? 0) + interval);
  });

  const frames = new Map<string, number>();
  const packages = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    busy += us;
    const where = url ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(?=[a-z]+\/)/, '')}` : '';
    const name = `${functionName || '(anonymous)'}${where ? ` ${where}:${lineNumber + 1}` : ''}`;
    frames.set(name, (frames.get(name) ?? 0) + us);
    const pkg = functionName.startsWith('(') ? functionName : packageOf(url);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  }
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
  console.log(
    `${file}\nbusy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s; self time, share of busy:`,
  );
  for (const [name, us] of [...frames].sort((a, b) => b[1] - a[1]).slice(0, Number(n)))
    console.log(`${pct(us)}  ${name}`);
  console.log('\nby package:');
  for (const [name, us] of [...packages].sort((a, b) => b[1] - a[1]).slice(0, Number(n))) {
    console.log(`${pct(us)}  ${name}`);
  }
}

main();
