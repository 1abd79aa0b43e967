import { readFileSync } from 'node:fs';
import { Router } from 'express';

const VERSION: string = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')).version;

const LINKS = {
  docs: 'README.md in the repository: Quick start, API notes and limits',
  health: '/healthz',
  readiness: '/readyz',
  config: '/config',
};

/**
 * `GET /`: what answers here, for a person (a small HTML page) or an API client (JSON by
 * `Accept`), so that opening the URL the start-up banner prints is not a 404.
 */
export function landingRouter(embedded: boolean): Router {
  const r = Router();
  r.get('/', (req, res) => {
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
      .type('html')
      .send(
        '<!doctype html><html><head><meta charset="utf-8"><title>Email engagement platform</title></head><body>' +
          `<h1>Email engagement platform ${VERSION}</h1>` +
          '<p>The REST API answers here: <code>POST /v1/send</code>, <code>POST /v1/track</code>, ' +
          '<code>POST /v1/verify</code> and the resources under <code>/contacts</code>, <code>/templates</code>, ' +
          '<code>/campaigns</code>, <code>/segments</code>, <code>/workflows</code>.</p>' +
          '<p>Start with the Quick start in the repository README. Health: <a href="/healthz">/healthz</a>, ' +
          'readiness: <a href="/readyz">/readyz</a>.' +
          (embedded ? ' Mail sent in embedded mode: <a href="/dev/mail">/dev/mail</a>.' : '') +
          '</p></body></html>',
      );
  });
  return r;
}
