import type { Express } from 'express';
import { z } from 'zod';
import { ApiRouter, openApiDocument } from '../http/api.js';
import { PAGE_CSP_DIRECTIVES } from '../http/security-headers.js';

// The reference page renders /openapi.json in the browser with the small script below, served by
// the gateway itself: no CDN, and a Content-Security-Policy that lets the page reach nothing else.
const CSP = `default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; ${
  PAGE_CSP_DIRECTIVES
}`;

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><link rel="stylesheet" href="/docs/docs.css"></head>
<body><header><h1>API reference</h1><p id="info">Loading <a href="/openapi.json">/openapi.json</a>...</p>
<nav id="tags"></nav></header><main id="operations"></main>
<script src="/docs/docs.js"></script></body></html>`;

const CSS = `body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d232b;background:#fafbfc}
header{padding:16px 24px;background:#fff;border-bottom:1px solid #dde2e8}h1{margin:0 0 4px}
nav a{margin-right:10px}main{padding:8px 24px 48px;max-width:1100px}
h2{margin:28px 0 8px;border-bottom:1px solid #dde2e8}
details.op{background:#fff;border:1px solid #dde2e8;border-radius:6px;margin:6px 0}
details.op>summary{cursor:pointer;padding:8px 10px;list-style:none;display:flex;gap:10px;align-items:baseline}
.method{font:600 12px monospace;text-transform:uppercase;padding:2px 6px;border-radius:4px;color:#fff;min-width:52px;
text-align:center}.get{background:#2f7d32}.post{background:#1f5fa8}.put,.patch{background:#a86a1f}
.delete{background:#b3261e}.path{font-family:monospace;font-weight:600}.sum{color:#4a5563}
.body{padding:4px 14px 12px}table{border-collapse:collapse;margin:4px 0}
td,th{border:1px solid #dde2e8;padding:3px 8px;text-align:left;vertical-align:top;font-size:14px}
pre{background:#f3f5f8;padding:8px;overflow:auto;font-size:13px;max-height:360px}.auth{font-size:13px;color:#4a5563}`;

const SCRIPT = `(async function () {
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const kid of kids) e.append(kid);
    return e;
  };
  const doc = await (await fetch('/openapi.json')).json();
  const schemas = (doc.components && doc.components.schemas) || {};
  const resolve = (s, depth) => {
    if (!s || typeof s !== 'object' || depth > 6) return s;
    if (s.$ref) {
      const name = s.$ref.split('/').pop();
      return depth > 2 ? { $ref: name } : resolve(schemas[name], depth + 1);
    }
    if (Array.isArray(s)) return s.map((x) => resolve(x, depth));
    const out = {};
    for (const [k, v] of Object.entries(s)) out[k] = resolve(v, depth);
    return out;
  };
  const show = (s) => el('pre', {}, JSON.stringify(resolve(s, 0), null, 2));
  const info = document.getElementById('info');
  info.textContent = doc.info.title + ' ' + doc.info.version + ': ' + doc.info.description;
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || 'Other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push({ path, method, op });
    }
  }
  const main = document.getElementById('operations');
  const nav = document.getElementById('tags');
  for (const [tag, ops] of [...byTag.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    const anchor = 'tag-' + tag.replace(/[^A-Za-z0-9]+/g, '-');
    nav.append(el('a', { href: '#' + anchor }, tag));
    main.append(el('h2', { id: anchor }, tag));
    for (const { path, method, op } of ops) {
      const body = el('div', { class: 'body' });
      if (op.description) body.append(el('p', {}, op.description));
      const auth = (op.security || []).map((s) => Object.keys(s).join(' + ')).join(' or ') || 'none';
      body.append(el('p', { class: 'auth' }, 'Authentication: ' + auth));
      if (op.parameters && op.parameters.length) {
        const table = el('table', {}, el('tr', {}, el('th', {}, 'Parameter'), el('th', {}, 'In'),
          el('th', {}, 'Schema'), el('th', {}, 'Description')));
        for (const p of op.parameters) {
          table.append(el('tr', {}, el('td', {}, p.name + (p.required ? ' *' : '')), el('td', {}, p.in),
            el('td', {}, JSON.stringify(resolve(p.schema, 0))), el('td', {}, p.description || '')));
        }
        body.append(el('h4', {}, 'Parameters'), table);
      }
      if (op.requestBody) {
        for (const [type, media] of Object.entries(op.requestBody.content)) {
          body.append(el('h4', {}, 'Request body (' + type + ')'), show(media.schema));
        }
      }
      body.append(el('h4', {}, 'Responses'));
      for (const [status, r] of Object.entries(op.responses)) {
        const d = el('details', { class: 'response' }, el('summary', {}, status + ' ' + r.description));
        for (const [type, media] of Object.entries(r.content || {})) d.append(el('div', {}, type), show(media.schema));
        body.append(d);
      }
      main.append(el('details', { class: 'op', id: op.operationId },
        el('summary', {}, el('span', { class: 'method ' + method }, method), el('span', { class: 'path' }, path),
          el('span', { class: 'sum' }, op.summary || '')), body));
    }
  }
  document.body.dataset.operations = String(main.querySelectorAll('details.op').length);
})();`;

const DOCUMENT_RESPONSE = z.record(z.unknown()).openapi({ description: 'This OpenAPI 3.1 document' });

/** `GET /openapi.json` (built once from the app's route declarations) and the `/docs` page. */
export function apiDocsRouter(app: Express, info: { version: string; serverUrl: string }) {
  const api = new ApiRouter();
  let built: unknown;
  api.get(
    '/openapi.json',
    {
      summary: 'The OpenAPI 3.1 document of this API',
      tag: 'Meta',
      auth: 'none',
      responses: { 200: DOCUMENT_RESPONSE },
    },
    (_req, res) => {
      built ??= openApiDocument(app, info);
      res.json(built);
    },
  );
  const asset = (type: string) => ({ description: 'The file', content: { [type]: z.string() } });
  api.get(
    '/docs',
    {
      summary: 'API reference page (renders /openapi.json)',
      tag: 'Meta',
      auth: 'none',
      responses: { 200: asset('text/html') },
    },
    (_req, res) => {
      res.setHeader('Content-Security-Policy', CSP);
      res.type('html').send(PAGE);
    },
  );
  api.get(
    '/docs/docs.js',
    {
      summary: 'Script of the reference page',
      tag: 'Meta',
      auth: 'none',
      responses: { 200: asset('text/javascript') },
    },
    (_req, res) => {
      res.type('text/javascript').send(SCRIPT);
    },
  );
  api.get(
    '/docs/docs.css',
    { summary: 'Style sheet of the reference page', tag: 'Meta', auth: 'none', responses: { 200: asset('text/css') } },
    (_req, res) => {
      res.type('text/css').send(CSS);
    },
  );
  return api.router;
}
