import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Router, type Response } from 'express';
import { notFound } from '@svc/lib/errors';
import { PAGE_CSP_DIRECTIVES } from '../http/security-headers.js';

/** Where the console's sources live (apps/console): a browser app, not a service. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../../../apps/console', import.meta.url));

interface Asset {
  type: string;
  body: Buffer;
}

/** Computed once per asset (the app's ETags are off): the browser revalidates with it and gets a 304. */
const etags = new WeakMap<Asset, string>();
const etagOf = (a: Asset) => {
  let tag = etags.get(a);
  if (!tag) etags.set(a, (tag = `"${createHash('sha256').update(a.body).digest('base64url').slice(0, 27)}"`));
  return tag;
};

/**
 * The console bundle: `apps/console/dist` when a build put it there (the container image does), else built once
 * in memory with esbuild on the first request (a development checkout never serves a stale bundle).
 */
export async function buildConsole(dir = CONSOLE_DIR): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  const html = await readFile(path.join(dir, 'index.html'));
  assets.set('index.html', { type: 'text/html; charset=utf-8', body: html });
  const dist = path.join(dir, 'dist');
  if (existsSync(path.join(dist, 'app.js'))) {
    assets.set('app.js', { type: 'text/javascript; charset=utf-8', body: await readFile(path.join(dist, 'app.js')) });
    assets.set('style.css', { type: 'text/css; charset=utf-8', body: await readFile(path.join(dist, 'style.css')) });
    return assets;
  }
  const esbuild = await import('esbuild');
  const out = await esbuild.build({
    entryPoints: { app: path.join(dir, 'src/main.tsx'), style: path.join(dir, 'src/app.css') },
    bundle: true,
    write: false,
    minify: true,
    format: 'esm',
    target: 'es2020',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: dist,
    logLevel: 'silent',
  });
  for (const file of out.outputFiles) {
    const name = path.basename(file.path);
    const type = name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8';
    assets.set(name, { type, body: Buffer.from(file.contents) });
  }
  return assets;
}

// The console's own code only; template previews (srcdoc frames inherit this) may load images and inline styles.
const CSP = `default-src 'self'; img-src * data:; style-src 'self' 'unsafe-inline'; ${PAGE_CSP_DIRECTIVES}`;

/** GET /app and every path under it: the single-page console (its routes are client-side). */
export function consoleRouter(): Router {
  const r = Router();
  let built: Promise<Map<string, Asset>> | null = null;
  const asset = async (name: string) => {
    built ??= buildConsole().catch((err) => {
      built = null; // a failed build is retried on the next request
      throw err;
    });
    return (await built).get(name);
  };
  const send = (res: Response, a: Asset) => {
    res.setHeader('Content-Security-Policy', CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('ETag', etagOf(a));
    res.type(a.type).send(a.body);
  };
  r.get('/app/assets/:name', async (req, res) => {
    const name = String(req.params.name);
    const a = name === 'index.html' ? undefined : await asset(name);
    if (!a) throw notFound('Asset', name);
    send(res, a);
  });
  r.get(['/app', '/app/*rest'], async (_req, res) => {
    send(res, (await asset('index.html'))!);
  });
  return r;
}
