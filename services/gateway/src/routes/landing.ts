import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ApiRouter } from '../http/api.js';
import { PAGE_CSP_DIRECTIVES } from '../http/security-headers.js';

export const VERSION: string = JSON.parse(
  readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8'),
).version;

const LINKS = {
  console: '/app',
  docs: '/docs',
  openapi: '/openapi.json',
  guide: 'README.md in the repository: Quick start, API notes and limits',
  health: '/healthz',
  readiness: '/readyz',
  config: '/config',
};

/**
 * `GET /`: what answers here, for a person (a small HTML page) or an API client (JSON by
 * `Accept`), so that opening the URL the start-up banner prints is not a 404.
 */
const LANDING = z.object({
  name: z.string(),
  version: z.string(),
  api: z.record(z.string()),
  mailViewer: z.string().optional(),
  links: z.record(z.string()),
});

export function landingRouter(embedded: boolean) {
  const r = new ApiRouter();
  const page = { description: 'A small page for a browser, JSON by Accept', content: { 'text/html': z.string() } };
  const op = {
    summary: 'What answers here: version and links (HTML for a browser, JSON for API clients)',
    tag: 'Meta',
    auth: 'none' as const,
    responses: { 200: { ...page, content: { ...page.content, 'application/json': LANDING } } },
  };
  r.get('/', op, (req, res) => {
    const body = {
      name: 'email engagement platform',
      version: VERSION,
      api: { send: 'POST /v1/send', track: 'POST /v1/track', verify: 'POST /v1/verify' },
      ...(embedded ? { mailViewer: '/dev/mail' } : {}),
      links: LINKS,
    };
    if (req.accepts(['html', 'json']) !== 'html') {
      res.json(body);
      return;
    }
    res
      .set('Content-Security-Policy', `default-src 'none'; ${PAGE_CSP_DIRECTIVES}`)
      .type('html')
      .send(
        '<!doctype html><html><head><meta charset="utf-8"><title>Email engagement platform</title></head><body>' +
          `<h1>Email engagement platform ${VERSION}</h1>` +
          '<p>Web console (sign up, projects and keys, contacts, templates, campaigns, workflows): ' +
          '<a href="/app">/app</a>.</p>' +
          '<p>The REST API answers here: <code>POST /v1/send</code>, <code>POST /v1/track</code>, ' +
          '<code>POST /v1/verify</code> and the resources under <code>/contacts</code>, <code>/templates</code>, ' +
          '<code>/campaigns</code>, <code>/segments</code>, <code>/workflows</code>.</p>' +
          '<p>API reference: <a href="/docs">/docs</a> (OpenAPI 3.1: <a href="/openapi.json">/openapi.json</a>). ' +
          'Start with the Quick start in the repository README. Health: <a href="/healthz">/healthz</a>, ' +
          'readiness: <a href="/readyz">/readyz</a>.' +
          (embedded ? ' Mail sent in embedded mode: <a href="/dev/mail">/dev/mail</a>.' : '') +
          '</p></body></html>',
      );
  });
  return r.router;
}
