import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync, readFileSync, rmSync, type WriteStream } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { workspaces } from '../scripts/build-dist.js';
import { call } from './support/client.js';
import { PrivatePostgres } from './support/private-postgres.js';
import { freePort, freeServicePorts, httpOk, imageNodeFlags, ROOT, waitFor } from './support/processes.js';

/**
 * The container image without Docker (not available here): the JavaScript build the Dockerfile runs
 * (`npm run build:dist`, tsc to dist/) starts the whole platform under plain node, no transpiler, and
 * drains on SIGTERM; everything the emitted code imports is a production dependency (what the image
 * installs); the Dockerfile copies files that exist and every workspace manifest, and .dockerignore
 * keeps dependencies, data, tests and history out of the build context.
 */
const run = promisify(execFile);
const OUT = path.join(ROOT, '.test-run', `dist-${randomBytes(4).toString('hex')}`);
// A PostgreSQL server of this test's own: the shared one may run out of connections under parallel runs.
const server = await PrivatePostgres.create();
server.start();
const DB = `image_${randomBytes(5).toString('hex')}`;
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

beforeAll(async () => {
  await run(process.execPath, ['--import', 'tsx', 'scripts/build-dist.ts', '--out-dir', OUT], {
    cwd: ROOT,
    maxBuffer: 1 << 24,
  });
}, 300_000);

afterAll(async () => {
  rmSync(OUT, { recursive: true, force: true });
  server.destroy();
});

test('the build emits JavaScript only: every source file, no test, each workspace linked with .js exports', () => {
  const emitted = files(OUT).map((f) => path.relative(OUT, f));
  expect(emitted.filter((f) => f.endsWith('.ts'))).toEqual([]);
  expect(emitted.filter((f) => /\.test\.js$|(^|\/)test-[\w-]+\.js$/.test(f))).toEqual([]);
  for (const entry of ['bin/platform.js', 'services/registry.js', 'lib/src/runtime.js', 'package.json']) {
    expect(emitted).toContain(entry);
  }
  // The signing threads are started from their own file; the console is bundled beside the gateway.
  expect(emitted).toContain('services/messaging/src/workers/signing-thread.js');
  for (const asset of ['index.html', 'dist/app.js', 'dist/style.css'])
    expect(emitted).toContain(`apps/console/${asset}`);
  for (const ws of workspaces()) {
    const manifest = JSON.parse(readFileSync(path.join(OUT, ws, 'package.json'), 'utf8'));
    expect(JSON.stringify(manifest.exports)).not.toContain('.ts');
    expect(existsSync(path.join(OUT, 'node_modules', manifest.name, 'package.json'))).toBe(true);
  }
});

test('what the emitted code imports is in "dependencies" (the image installs no devDependencies)', () => {
  const builtins = new Set(builtinModules);
  const imported = new Set<string>();
  for (const file of files(OUT).filter((f) => f.endsWith('.js'))) {
    const code = readFileSync(file, 'utf8');
    // Import and export statements (tsc writes each on its own line), dynamic imports and require calls.
    const statements = /^\s*(?:import|export)\b[^'";]*?from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;
    const calls = /\b(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g;
    const specs = [...code.matchAll(statements), ...code.matchAll(calls)].map((m) => m[1] ?? m[2]);
    for (const spec of specs.filter((s) => !s.startsWith('.'))) {
      if (spec.startsWith('node:') || builtins.has(spec) || spec.startsWith('@svc/')) continue;
      const parts = spec.split('/');
      imported.add(spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]);
    }
  }
  expect(imported.size).toBeGreaterThan(10);
  const missing = [...imported].filter((name) => !pkg.dependencies[name]).sort();
  expect(missing).toEqual([]);
  for (const tool of ['typescript', 'tsx', 'jest', '@biomejs/biome']) expect(pkg.dependencies[tool]).toBeUndefined();
});

test('plain node runs the build: --migrate, every service, /readyz, SIGTERM exits 0', async () => {
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: server.url,
    NATS_URL: '',
    REDIS_URL: '',
    SMTP_URL: '',
    PORT: String(port),
    SESSION_SECRET: 'image-test-session-secret',
    SERVICE_TOKEN: 'image-test-service-token-0123456789abcdef',
    SHUTDOWN_DRAIN_MS: '500',
    LOG_LEVEL: 'info',
    ...(await freeServicePorts()),
  };
  // No --import: a .ts file anywhere in the graph would fail to load.
  const logs = new WeakMap<ChildProcess, WriteStream>();
  const node = (args: string[], name: string): ChildProcess => {
    const child = spawn(process.execPath, [...imageNodeFlags(), path.join(OUT, 'bin/platform.js'), ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const log = createWriteStream(path.join(ROOT, '.test-run', 'logs', `${name}-${DB}.log`));
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    logs.set(child, log);
    return child;
  };
  // 'close', not 'exit': it comes after both pipes have ended ('exit' may come before the last lines are read),
  // and the log file is complete once its stream has written them.
  const exit = (child: ChildProcess) =>
    new Promise<number | null>((resolve) => child.once('close', (code) => logs.get(child)!.end(() => resolve(code))));

  const migrate = node(['--migrate'], 'image-migrate');
  expect(await exit(migrate)).toBe(0);

  const platform = node([], 'image-platform');
  const exited = exit(platform);
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitFor('built platform', () => httpOk(`${baseUrl}/readyz`), platform, 90_000);
    const root = await call('GET', '/', undefined, { baseUrl, headers: { accept: 'application/json' } });
    expect(root.body.version).toBe(pkg.version);
    const signup = await call(
      'POST',
      '/auth/signup',
      { email: `${DB}@example.com`, password: 'password-123' },
      {
        baseUrl,
      },
    );
    expect(signup.status).toBe(201);
    // The console from the prebuilt bundle (the image has no console sources).
    const bundle = await fetch(`${baseUrl}/app/assets/app.js`);
    expect(bundle.status).toBe(200);
    expect(await bundle.text()).toBe(readFileSync(path.join(OUT, 'apps/console/dist/app.js'), 'utf8'));
  } finally {
    platform.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
  const log = readFileSync(path.join(ROOT, '.test-run', 'logs', `image-platform-${DB}.log`), 'utf8');
  expect(log).toContain('"msg":"stopped"');
}, 180_000);

test('Dockerfile: copies files that exist and every workspace manifest; runs dist under tini as non-root', () => {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const lines = dockerfile.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const copies = lines
    .filter((l) => /^COPY\s/.test(l) && !l.includes('--from='))
    .flatMap((l) => l.trim().split(/\s+/).slice(1, -1));
  expect(copies.length).toBeGreaterThan(5);
  for (const source of copies) expect([source, existsSync(path.join(ROOT, source))]).toEqual([source, true]);
  for (const ws of workspaces()) expect(copies).toContain(`${ws}/package.json`);
  // Nothing the Dockerfile copies is kept out of the build context by .dockerignore.
  const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  for (const entry of ['.git', 'node_modules', '.data', '.test-run', 'test', 'dist']) expect(ignored).toContain(entry);
  for (const source of copies) {
    for (const entry of ignored.filter((e) => !e.includes('*'))) {
      expect([source, source === entry || source.startsWith(`${entry}/`)]).toEqual([source, false]);
    }
  }
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const final = stages.at(-1)!;
  expect(dockerfile).toMatch(/npm run build:dist/);
  expect(dockerfile).toMatch(/npm ci --omit=dev/);
  expect(final).toMatch(/COPY --from=deps \/app\/node_modules node_modules/);
  expect(final).toMatch(/COPY --from=build \/app\/dist dist/);
  expect(final).toMatch(/^USER node$/m);
  expect(final).toContain('ENTRYPOINT ["/usr/bin/tini", "--", "node", "dist/bin/platform.js"]');
  // The image's NODE_OPTIONS, which the benches run the services with.
  expect(imageNodeFlags()).toEqual(['--max-semi-space-size=32']);
  expect(final).not.toMatch(/tsx|typescript/);
  // The build stage's script list exists: npm run build:dist is the script the test ran.
  expect(pkg.scripts['build:dist']).toContain('scripts/build-dist.ts');
});
