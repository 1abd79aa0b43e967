import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Config } from '@svc/lib/config';
import { AppError } from '@svc/lib/errors';
import { createRpcClient } from '@svc/lib/rpc-client';
import type { IdentityService } from '@svc/proto/svc/identity/v1/identity_pb';
import { DevMailService, type SinkMail } from '@svc/proto/svc/messaging/v1/dev_mail_pb';
import type { Authenticator } from '../http/auth.js';
import type { LoginGuard } from '../http/login-guard.js';
import { sameOrigin } from '../http/same-origin.js';
import { PAGE_CSP_DIRECTIVES } from '../http/security-headers.js';
import { limitParam } from '../http/query.js';
import { z } from 'zod';
import { ApiRouter, limitQuery, type ResponseDoc } from '../http/api.js';

const SinkSummary = z
  .object({
    id: z.string(),
    emailId: z.string().nullable(),
    projectId: z.string().nullable(),
    from: z.string(),
    to: z.array(z.string()),
    envelope: z.object({ from: z.string(), to: z.array(z.string()) }),
    subject: z.string(),
    text: z.string(),
    receivedAt: z.string().nullable(),
    size: z.number().int(),
    attachments: z.number().int(),
    url: z.string(),
  })
  .openapi('SinkMail');
const SinkMessage = SinkSummary.extend({
  html: z.string(),
  headers: z.array(z.object({ name: z.string(), value: z.string() })),
  attachments: z.array(
    z.object({
      filename: z.string(),
      contentType: z.string(),
      size: z.number().int(),
      contentId: z.string().nullable(),
      disposition: z.string(),
      url: z.string(),
    }),
  ),
  raw: z.string(),
  rawUrl: z.string(),
}).openapi('SinkMessage');
const Inbox = z.object({ enabled: z.boolean(), data: z.array(SinkSummary) });
const PAGE = { description: 'A page (for a browser)', content: { 'text/html': z.string() } };
const mail = (summary: string, responses: Record<number, ResponseDoc>, errors: number[] = []) => ({
  summary: `${summary} (embedded mode only)`,
  tag: 'Mail viewer',
  auth: 'session' as const,
  responses,
  errors,
});
const inboxQuery = z.object({ limit: limitQuery(50, 200) });

interface DevMailClients {
  identity: Client<typeof IdentityService>;
}

/** The raw source shown inline on the message page; longer sources are cut there (the raw link has it all). */
const RAW_SHOWN = 512 * 1024;

// The pages run no script; the mail's own HTML is shown in a sandboxed srcdoc frame (no scripts, no
// same-origin access), its links open in a new tab, and its images (the open pixel) may load.
const PAGE_CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  'img-src * data: cid:',
  "frame-src 'self'",
  PAGE_CSP_DIRECTIVES,
].join('; ');

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
const iso = (m: SinkMail) => (m.receivedAt ? timestampDate(m.receivedAt).toISOString() : null);

/** HTML for a browser that asks for it first; JSON for API clients and anyone who does not say. */
const wantsHtml = (req: Request) => req.accepts(['json', 'html']) === 'html';

const STYLE = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1d232a;color:#fff;padding:10px 20px;display:flex;gap:16px;align-items:center}
header a{color:#fff}main{padding:16px 20px;max-width:1200px}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #e3e6ea;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#eef0f3}tr.msg:hover{background:#f0f6ff}
pre{background:#fff;border:1px solid #e3e6ea;padding:10px;overflow:auto;white-space:pre-wrap;word-break:break-all}
iframe{width:100%;height:480px;border:1px solid #e3e6ea;background:#fff}
.hname{white-space:nowrap;font-weight:600}.muted{color:#68717c}
form{background:#fff;padding:16px;max-width:360px;border:1px solid #e3e6ea}
input{display:block;width:100%;margin:4px 0 12px;padding:6px;box-sizing:border-box}
`;

function page(res: Response, status: number, title: string, body: string): void {
  res
    .status(status)
    .set('Content-Security-Policy', PAGE_CSP)
    .set('X-Content-Type-Options', 'nosniff')
    // Not no-referrer: the sign-in form's POST would carry `Origin: null`, refused as another site's (same-origin.ts).
    .set('Referrer-Policy', 'same-origin')
    .set('Cache-Control', 'no-store')
    .type('html')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>` +
        `<style>${STYLE}</style></head><body><header><strong>Mail viewer</strong>` +
        '<a href="/dev/mail">Inbox</a><span class="muted">embedded mode: mail the local SMTP sink received</span>' +
        `</header><main>${body}</main></body></html>`,
    );
}

function signInPage(res: Response, status: number, problem?: string): void {
  page(
    res,
    status,
    'Sign in: mail viewer',
    '<h1>Sign in</h1><p>The mail viewer shows the mail of your own projects.</p>' +
      (problem ? `<p role="alert"><strong>${esc(problem)}</strong></p>` : '') +
      '<form method="post" action="/dev/mail/sign-in">' +
      '<label>Email <input name="email" type="email" autocomplete="username" required></label>' +
      '<label>Password <input name="password" type="password" autocomplete="current-password" required></label>' +
      '<button type="submit">Sign in</button></form>',
  );
}

const summaryJson = (m: SinkMail) => ({
  id: m.id,
  emailId: m.emailId || null,
  projectId: m.projectId || null,
  from: m.from,
  to: m.to,
  envelope: { from: m.mailFrom, to: m.rcptTo },
  subject: m.subject,
  text: m.text,
  receivedAt: iso(m),
  size: m.size,
  attachments: m.attachmentCount,
  url: `/dev/mail/${m.id}`,
});

const messageJson = (m: SinkMail) => ({
  ...summaryJson(m),
  text: m.text,
  html: m.html,
  headers: m.headers.map((h) => ({ name: h.name, value: h.value })),
  attachments: m.attachments.map((a, i) => ({
    filename: a.filename,
    contentType: a.contentType,
    size: Number(a.size),
    contentId: a.contentId || null,
    disposition: a.disposition,
    url: `/dev/mail/${m.id}/attachments/${i}`,
  })),
  raw: Buffer.from(m.raw).toString('utf8'),
  rawUrl: `/dev/mail/${m.id}/raw`,
});

function inboxHtml(messages: SinkMail[]): string {
  if (!messages.length)
    return (
      '<h1>Inbox</h1><p>No mail yet. Send one from the sandbox sender, for example:</p>' +
      '<pre>curl -X POST $URL/v1/send -H "Authorization: Bearer sk_..." -H "content-type: application/json" \\\n' +
      '  -d \'{"to":"you@example.com","from":"sandbox@sandbox.localhost","subject":"Hi",' +
      '"body":"&lt;a href=\\"https://example.com\\"&gt;A link&lt;/a&gt;"}\'</pre>'
    );
  const rows = messages
    .map(
      (m) =>
        `<tr class="msg"><td class="muted">${esc(iso(m) ?? '')}</td><td>${esc(m.from)}</td>` +
        `<td>${esc(m.to.join(', '))}</td><td><a href="/dev/mail/${esc(m.id)}">${esc(m.subject || '(no subject)')}</a>` +
        `${m.attachmentCount ? ` <span class="muted">(${m.attachmentCount} attachment(s))</span>` : ''}</td>` +
        `<td class="muted">${m.size} B</td></tr>`,
    )
    .join('');
  return (
    `<h1>Inbox (${messages.length})</h1><table><thead><tr><th>Received</th><th>From</th><th>To</th>` +
    `<th>Subject</th><th>Size</th></tr></thead><tbody>${rows}</tbody></table>`
  );
}

/** The mail's HTML for a sandboxed srcdoc frame: links open in a new tab (the frame cannot navigate the page). */
const framed = (html: string) => `<!doctype html><html><head><base target="_blank"></head><body>${html}</body></html>`;

function messageHtml(m: SinkMail): string {
  const raw = Buffer.from(m.raw).toString('utf8');
  const headerRows = m.headers
    .map((h) => `<tr><td class="hname">${esc(h.name)}</td><td>${esc(h.value)}</td></tr>`)
    .join('');
  const attachments = m.attachments.length
    ? `<ul>${m.attachments
        .map(
          (a, i) =>
            `<li><a href="/dev/mail/${esc(m.id)}/attachments/${i}">${esc(a.filename || `attachment-${i}`)}</a> ` +
            `<span class="muted">${esc(a.contentType)}, ${Number(a.size)} B, ${esc(a.disposition)}` +
            `${a.contentId ? `, cid:${esc(a.contentId)}` : ''}</span></li>`,
        )
        .join('')}</ul>`
    : '<p class="muted">None.</p>';
  return (
    `<h1>${esc(m.subject || '(no subject)')}</h1>` +
    '<table>' +
    `<tr><td class="hname">From</td><td>${esc(m.from)}</td></tr>` +
    `<tr><td class="hname">To</td><td>${esc(m.to.join(', '))}</td></tr>` +
    `<tr><td class="hname">Received</td><td>${esc(iso(m) ?? '')}</td></tr>` +
    `<tr><td class="hname">Envelope</td><td>MAIL FROM ${esc(m.mailFrom)}; ` +
    `RCPT TO ${esc(m.rcptTo.join(', '))}</td></tr>` +
    '</table>' +
    '<h2>HTML</h2>' +
    (m.html
      ? `<iframe title="HTML part" sandbox="allow-popups allow-popups-to-escape-sandbox" srcdoc="${esc(
          framed(m.html),
        )}"></iframe>`
      : '<p class="muted">No HTML part.</p>') +
    `<h2>Text</h2>${m.text ? `<pre>${esc(m.text)}</pre>` : '<p class="muted">No text part.</p>'}` +
    `<h2>Attachments</h2>${attachments}` +
    `<h2>Headers</h2><table><tbody>${headerRows}</tbody></table>` +
    `<h2>Raw source</h2><p><a href="/dev/mail/${esc(m.id)}/raw">Download</a> (${m.size} B)</p>` +
    `<pre>${esc(raw.length > RAW_SHOWN ? `${raw.slice(0, RAW_SHOWN)}\n[... cut; download for all]` : raw)}</pre>`
  );
}

/**
 * Embedded mode only: the mail viewer (like Mailpit or MailHog) over what the local SMTP sink
 * received, kept in messaging's database. Session-cookie auth; only the mail of the projects the
 * signed-in user is a member of. HTML for browsers, JSON at `/dev/mail.json` or by `Accept`.
 */
export function devMailRouter(
  clients: DevMailClients,
  auth: Authenticator,
  loginGuard: LoginGuard,
  config: Config,
): Router {
  const r = new ApiRouter();
  const devMail = createRpcClient(DevMailService, config.rpcUrls.messaging, config);
  const session = auth.session();

  /** The session, or (for a browser) the sign-in page instead of a JSON 401. */
  const signedIn: RequestHandler = async (req, res, next) => {
    try {
      await session(req, res, () => undefined);
    } catch (err) {
      if (err instanceof AppError && err.status === 401 && wantsHtml(req)) return signInPage(res, 401);
      throw err;
    }
    next();
  };

  /** Whose mail the signed-in user sees: their projects', and the account mail sent to their own address. */
  const owner = async (req: Request) => {
    const [projects, user] = await Promise.all([
      clients.identity.listProjects({ userId: req.userId }),
      clients.identity.getUser({ userId: req.userId }),
    ]);
    return { projectIds: projects.projects.map((p) => p.id), recipient: user.user?.email ?? '' };
  };

  const list = async (req: Request) =>
    devMail.listSinkMail({ limit: limitParam(req.query, 50, 200), ...(await owner(req)) });

  r.get(
    '/dev/mail.json',
    { ...mail('Mail the local SMTP sink received for your projects', { 200: Inbox }), query: inboxQuery },
    signedIn,
    async (req, res) => {
      const out = await list(req);
      res.json({ enabled: out.enabled, data: out.messages.map(summaryJson) });
    },
  );

  r.get(
    '/dev/mail',
    {
      ...mail('Mail viewer inbox: HTML for a browser, JSON by Accept', {
        200: { ...PAGE, content: { ...PAGE.content, 'application/json': Inbox } },
      }),
      query: inboxQuery,
    },
    signedIn,
    async (req, res) => {
      const out = await list(req);
      if (wantsHtml(req)) return page(res, 200, 'Mail viewer', inboxHtml(out.messages));
      res.json({ enabled: out.enabled, data: out.messages.map(summaryJson) });
    },
  );

  r.post(
    '/dev/mail/sign-in',
    {
      summary: 'Sign-in form of the mail viewer (sets the session cookie)',
      tag: 'Mail viewer',
      auth: 'none',
      bodyType: 'application/x-www-form-urlencoded',
      body: z.object({ email: z.string(), password: z.string() }),
      responses: {
        303: { description: 'Signed in: redirect to /dev/mail' },
        401: PAGE,
        403: { description: "Another site's form (login CSRF): CROSS_SITE_REQUEST" },
        429: PAGE,
      },
    },
    // Another site's form must not sign the browser in to the attacker's account (login CSRF).
    sameOrigin(auth.publicOrigin),
    express.urlencoded({ extended: false, limit: '8kb' }),
    async (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const email = typeof body.email === 'string' ? body.email : '';
      const password = typeof body.password === 'string' ? body.password : '';
      // The same budgets as POST /auth/login (routes/identity.ts).
      const out = await loginGuard
        .attempt(req.ip, email, () => clients.identity.login({ email, password }))
        .catch((err: unknown) => {
          if (err instanceof AppError && err.status < 500) return err;
          throw err;
        });
      if (out instanceof AppError && out.status === 429)
        return signInPage(res, 429, 'Too many sign-in attempts; try again later.');
      if (out instanceof AppError) return signInPage(res, 401, 'Wrong email or password.');
      auth.setSession(res, out.sessionToken);
      res.redirect(303, '/dev/mail');
    },
  );

  const message = async (req: Request) => {
    const id = String(req.params.id).replace(/\.json$/, '');
    const out = await devMail.getSinkMail({ id, ...(await owner(req)) });
    return out.message!;
  };

  r.get(
    '/dev/mail/:id',
    mail(
      'A message: HTML page, or JSON (by Accept or an id ending in .json)',
      { 200: { ...PAGE, content: { ...PAGE.content, 'application/json': SinkMessage } } },
      [404],
    ),
    signedIn,
    async (req, res) => {
      const m = await message(req);
      if (!String(req.params.id).endsWith('.json') && wantsHtml(req))
        return page(res, 200, m.subject || 'Message', messageHtml(m));
      res.json(messageJson(m));
    },
  );

  r.get(
    '/dev/mail/:id/raw',
    mail(
      'Raw source of a message',
      { 200: { description: 'The message', content: { 'message/rfc822': z.string() } } },
      [404],
    ),
    signedIn,
    async (req, res) => {
      const m = await message(req);
      res
        .set('X-Content-Type-Options', 'nosniff')
        .set('Content-Disposition', `attachment; filename="${m.id}.eml"`)
        .type('message/rfc822')
        .send(Buffer.from(m.raw));
    },
  );

  r.get(
    '/dev/mail/:id/attachments/:index',
    mail(
      'An attachment of a message (always a download)',
      {
        200: {
          description: 'The attachment',
          content: { 'application/octet-stream': z.string().openapi({ format: 'binary' }) },
        },
      },
      [404],
    ),
    signedIn,
    async (req, res) => {
      const m = await message(req);
      const a = m.attachments[Number(req.params.index)];
      if (!a || !/^\d+$/.test(String(req.params.index)))
        throw new AppError({
          code: 'RESOURCE_NOT_FOUND',
          status: 404,
          message: `Attachment ${req.params.index} not found`,
          details: { resource: 'Attachment', id: String(req.params.index) },
        });
      // Always a download: an HTML attachment must not render on this origin. res.attachment() writes the name
      // as RFC 6266 `filename*` (a non-Latin name like `отчёт.pdf` is not a valid header value as is).
      res
        .set('X-Content-Type-Options', 'nosniff')
        .attachment(a.filename || `attachment-${req.params.index}`)
        .type(a.contentType || 'application/octet-stream')
        .send(Buffer.from(a.content));
    },
  );
  return r.router;
}
